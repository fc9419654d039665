// A limit change request, folded from its stream, and the pure decisions on it: whether a change needs a
// second operator (the approvals setting), when it may take effect (effectiveFrom), and who may approve,
// reject or withdraw it. The runner (../controlPlane.ts) loads the streams and appends what these decide.
import { resolveEffectiveLimit, type Dimension, type LimitValue } from '../../governance/index.ts';
import type {
  ControlPlaneEvent,
  LimitApprovals,
  LimitChangeCommand,
  LimitChangeRequestedData,
  RecordedEvent,
} from '../../ledger/index.ts';
import { controlPlaneError, type Caller, type ControlPlaneError, type ControlPlaneView } from '../controlPlaneCommand.ts';
import { overrideApplies } from '../state.ts';
import { occurredAt } from '../view.ts';

/** How far in the past an effectiveFrom may lie (client clocks run behind): it then takes effect at once. */
export const EFFECTIVE_FROM_SKEW_MS = 60_000;
/** How far ahead a change may be scheduled. */
export const EFFECTIVE_FROM_MAX_AHEAD_MS = 366 * 24 * 3_600_000;
/** The approvals setting until an operator sets one: no change needs a second operator. */
export const DEFAULT_APPROVAL_EXPIRY_SECONDS = 24 * 3_600;
export const NO_APPROVALS: LimitApprovals = {
  tierChanges: false,
  platformChanges: false,
  overrideAboveTimes: null,
  expirySeconds: DEFAULT_APPROVAL_EXPIRY_SECONDS,
};
export const APPROVAL_EXPIRY_MIN_SECONDS = 60;
export const APPROVAL_EXPIRY_MAX_SECONDS = 30 * 24 * 3_600;
export const OVERRIDE_TIMES_MAX = 1_000_000;

export const LIMIT_CHANGE_COMMANDS: readonly LimitChangeCommand[] = [
  'setPlatformDefault',
  'setTierLimit',
  'clearTierLimit',
  'setTenantOverride',
  'clearTenantOverride',
];

export type LimitChangeRequestState = 'PENDING_APPROVAL' | 'SCHEDULED' | 'APPLIED' | 'REJECTED' | 'WITHDRAWN' | 'EXPIRED' | 'FAILED';

export interface Decision {
  by: string;
  reason: string | null;
  at: Date;
}

/** A request as its stream tells it. */
export interface LimitChangeRequest {
  changeId: string;
  requested: LimitChangeRequestedData;
  proposer: Decision;
  approved: Decision | null;
  /** Rejected, withdrawn, or (by the system) failed. */
  closed: (Decision & { state: 'REJECTED' | 'WITHDRAWN' | 'FAILED' }) | null;
  applied: Decision | null;
}

type StoredEvent = Pick<RecordedEvent, 'type' | 'data' | 'metadata' | 'recordedAt'>;

export function requestOf(events: readonly StoredEvent[]): LimitChangeRequest | undefined {
  let request: LimitChangeRequest | undefined;
  for (const event of events) {
    const decision: Decision = {
      by: typeof event.metadata.actor === 'string' ? event.metadata.actor : 'unknown',
      reason: typeof event.metadata.reason === 'string' ? event.metadata.reason : null,
      at: occurredAt(event),
    };
    if (event.type === 'LimitChangeRequested') {
      const requested = event.data as LimitChangeRequestedData;
      request = { changeId: requested.changeId, requested, proposer: decision, approved: null, closed: null, applied: null };
      continue;
    }
    if (!request) continue;
    if (event.type === 'LimitChangeApproved') request.approved = decision;
    else if (event.type === 'LimitChangeRejected') request.closed = { ...decision, state: 'REJECTED' };
    else if (event.type === 'LimitChangeWithdrawn') request.closed = { ...decision, state: 'WITHDRAWN' };
    else if (event.type === 'LimitChangeFailed') request.closed = { ...decision, state: 'FAILED' };
    else if (event.type === 'LimitChangeApplied') request.applied = decision;
  }
  return request;
}

/** Where a request stands at `now`; an unapproved request lapses at its approvalExpiresAt, at read time. */
export function stateOf(request: LimitChangeRequest, now: Date): LimitChangeRequestState {
  if (request.applied) return 'APPLIED';
  if (request.closed) return request.closed.state;
  if (request.requested.needsApproval && !request.approved) {
    const expiresAt = request.requested.approvalExpiresAt;
    return expiresAt !== null && Date.parse(expiresAt) <= now.getTime() ? 'EXPIRED' : 'PENDING_APPROVAL';
  }
  return 'SCHEDULED';
}

/** The instant a scheduled request takes effect: its effectiveFrom, or its approval when that came later. */
export function inForceFrom(request: LimitChangeRequest): Date {
  const effectiveFrom = new Date(request.requested.effectiveFrom);
  return request.approved && request.approved.at > effectiveFrom ? request.approved.at : effectiveFrom;
}

/** effectiveFrom as given: null (or an instant up to the skew before now) means now; bounded a year ahead. */
export function checkEffectiveFrom(value: unknown, now: Date): Date | null | ControlPlaneError {
  if (value === undefined || value === null) return null;
  const instant = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
  if (!instant || Number.isNaN(instant.getTime())) {
    return controlPlaneError('InvalidInput', 'effectiveFrom must be an ISO 8601 date-time', 'effectiveFrom');
  }
  const aheadMs = instant.getTime() - now.getTime();
  if (aheadMs < -EFFECTIVE_FROM_SKEW_MS) {
    return controlPlaneError(
      'InvalidInput',
      `effectiveFrom ${instant.toISOString()} is more than ${EFFECTIVE_FROM_SKEW_MS / 1000} s in the past (now ${now.toISOString()})`,
      'effectiveFrom',
    );
  }
  if (aheadMs > EFFECTIVE_FROM_MAX_AHEAD_MS) {
    return controlPlaneError('InvalidInput', `effectiveFrom may lie at most 366 days ahead (now ${now.toISOString()})`, 'effectiveFrom');
  }
  return aheadMs <= 0 ? null : instant;
}

/** The approvals setting as the platform stream last set it. */
export function approvalsOf(platformEvents: readonly StoredEvent[]): LimitApprovals {
  let approvals = NO_APPROVALS;
  for (const event of platformEvents) {
    if (event.type === 'LimitApprovalsSet') approvals = (event.data as { approvals: LimitApprovals }).approvals;
  }
  return approvals;
}

export interface LimitApprovalsInput {
  tierChanges: boolean;
  platformChanges: boolean;
  overrideAboveTimes?: number | null;
  expirySeconds?: number | null;
  reason?: string | null;
}

export function checkApprovals(input: LimitApprovalsInput): LimitApprovals | ControlPlaneError {
  if (typeof input.tierChanges !== 'boolean') return controlPlaneError('InvalidInput', 'tierChanges is true or false', 'tierChanges');
  if (typeof input.platformChanges !== 'boolean') return controlPlaneError('InvalidInput', 'platformChanges is true or false', 'platformChanges');
  const times = input.overrideAboveTimes ?? null;
  if (times !== null && !(typeof times === 'number' && Number.isFinite(times) && times >= 1 && times <= OVERRIDE_TIMES_MAX)) {
    return controlPlaneError('InvalidInput', `overrideAboveTimes is 1 to ${OVERRIDE_TIMES_MAX.toLocaleString('en')}`, 'overrideAboveTimes');
  }
  const expirySeconds = input.expirySeconds ?? DEFAULT_APPROVAL_EXPIRY_SECONDS;
  if (!Number.isInteger(expirySeconds) || expirySeconds < APPROVAL_EXPIRY_MIN_SECONDS || expirySeconds > APPROVAL_EXPIRY_MAX_SECONDS) {
    return controlPlaneError(
      'InvalidInput',
      `expirySeconds is a whole number from ${APPROVAL_EXPIRY_MIN_SECONDS} to ${APPROVAL_EXPIRY_MAX_SECONDS} (30 days)`,
      'expirySeconds',
    );
  }
  return { tierChanges: input.tierChanges, platformChanges: input.platformChanges, overrideAboveTimes: times, expirySeconds };
}

/** The streams an override's approval check reads besides the tenant's: its tier's and the platform's. */
export function needsApproval(planned: ControlPlaneEvent, approvals: LimitApprovals, view: ControlPlaneView): boolean {
  switch (planned.type) {
    case 'PlatformDefaultSet':
      return approvals.platformChanges;
    case 'TierLimitSet':
    case 'TierLimitCleared':
      return approvals.tierChanges;
    case 'TenantOverrideSet': {
      if (approvals.overrideAboveTimes === null) return false;
      const tenant = view.tenant(planned.data.tenantId);
      const tier = tenant?.tierId ? view.tier(tenant.tierId) : undefined;
      const without = resolveEffectiveLimit(planned.data.dimension, {
        tier: tier?.limits[planned.data.dimension],
        platformDefault: view.platform.defaults[planned.data.dimension],
      }).value;
      return magnitude(planned.data.value) > approvals.overrideAboveTimes * magnitude(without);
    }
    default:
      return false;
  }
}

/** The figure an override is compared by: its rate, or its ceiling for a count dimension. */
function magnitude(value: LimitValue): number {
  return value.ratePerSecond ?? value.ceiling ?? 0;
}

/** What a request changes, for the read model and the overlay (dueChanges.ts). */
export function targetOf(planned: ControlPlaneEvent): { kind: 'platform' | 'tier' | 'tenant'; tierId: string | null; tenantId: string | null; dimension: Dimension } {
  const data = planned.data as { tierId?: string; tenantId?: string; dimension: Dimension };
  if (planned.type === 'PlatformDefaultSet') return { kind: 'platform', tierId: null, tenantId: null, dimension: data.dimension };
  if (planned.type === 'TierLimitSet' || planned.type === 'TierLimitCleared') {
    return { kind: 'tier', tierId: data.tierId!, tenantId: null, dimension: data.dimension };
  }
  return { kind: 'tenant', tierId: null, tenantId: data.tenantId!, dimension: data.dimension };
}

/** A second operator's decision: only an OPERATOR, never the proposer, only while the request waits. */
export function checkApproval(actor: Caller, request: LimitChangeRequest | undefined, changeId: string, now: Date): ControlPlaneError | undefined {
  if (actor.role !== 'OPERATOR') return controlPlaneError('Forbidden', `role ${actor.role} may not approve limit changes`);
  const open = checkOpen(request, changeId, now, ['PENDING_APPROVAL']);
  if (open) return open;
  if (request!.proposer.by === actor.id) {
    return controlPlaneError('Forbidden', `${actor.id} proposed change ${changeId}: a second operator approves it`, 'changeId');
  }
  return undefined;
}

/** The request is in one of `states` at `now`; otherwise an InvalidInput that says where it stands. */
export function checkOpen(
  request: LimitChangeRequest | undefined,
  changeId: string,
  now: Date,
  states: readonly LimitChangeRequestState[],
): ControlPlaneError | undefined {
  if (!request) return controlPlaneError('InvalidInput', `no limit change ${changeId} was requested`, 'changeId');
  const state = stateOf(request, now);
  if (state === 'SCHEDULED' && states.includes('SCHEDULED') && inForceFrom(request).getTime() <= now.getTime()) {
    return controlPlaneError('InvalidInput', `change ${changeId} took effect at ${inForceFrom(request).toISOString()}`, 'changeId');
  }
  if (!states.includes(state)) return controlPlaneError('InvalidInput', `change ${changeId} is ${state}, not ${states.join(' or ')}`, 'changeId');
  return undefined;
}

/** Whether an override planned when requested still applies at `at` (a scheduled override may have lapsed first). */
export function plannedStillApplies(planned: ControlPlaneEvent, at: Date): boolean {
  if (planned.type !== 'TenantOverrideSet') return true;
  return overrideApplies({ value: planned.data.value, expiresAt: planned.data.expiresAt }, at);
}
