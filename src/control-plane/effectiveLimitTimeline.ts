// Every change of one tenant's effective limit in one dimension, whatever level caused it: its own override
// set, cleared or lapsed; its tier reassigned; its tier's limit set or cleared; the platform default changed.
// limitHistory lists what each level recorded; this answers what the tenant felt. It replays the ledger (the
// tenant's stream, the platform's, and the stream of every tier the tenant was ever on) and resolves the
// cascade just before and at each event's instant, keeping only the events that moved the effective value.
import { resolveEffectiveLimit } from '../governance/index.ts';
import type { Dimension, LimitSourceLevel, LimitValue } from '../governance/index.ts';
import { PLATFORM_STREAM, tenantStream, tierStream, type ControlPlaneEvent, formatPosition, type EventStore, type RecordedEvent } from '../ledger/index.ts';
import type { NotRegisteredAt } from './effectiveLimitsAt.ts';

type StreamEventLike = Pick<RecordedEvent, 'stream' | 'type' | 'data' | 'metadata' | 'recordedAt' | 'position'>;
import { refOf, type LedgerEventRef } from './sourceEvents.ts';
import { overrideApplies } from './state.ts';
import { asControlPlaneEvent, occurredAt, viewOf, OVERRIDE_EXPIRY_ACTOR, OVERRIDE_EXPIRY_REASON } from './view.ts';

export type TimelineCause =
  | 'TENANT_REGISTERED'
  | 'TENANT_TIER_ASSIGNED'
  | 'OVERRIDE_SET'
  | 'OVERRIDE_CLEARED'
  | 'OVERRIDE_EXPIRED'
  | 'TIER_LIMIT_SET'
  | 'TIER_LIMIT_CLEARED'
  | 'PLATFORM_DEFAULT_SET';

export interface EffectiveLimitChange {
  at: Date;
  cause: TimelineCause;
  /** The effective value just before; null only at registration. */
  previous: LimitValue | null;
  previousSource: LimitSourceLevel | null;
  value: LimitValue;
  /** The level of the cascade that wins from now on. */
  source: LimitSourceLevel;
  tierId: string | null;
  actor: string;
  reason: string | null;
  /** Ledger position of the event that caused it (a lapse: of the event that set the override, with :expired). */
  position: string;
  /** A requested change not yet in force (scheduled, or waiting for approval): what it will do at its instant. */
  pending: boolean;
  changeId: string | null;
  /** The event that caused it (a lapse: the one that set the override), to prove with ledgerInclusionProof; none for a pending change (not yet in the ledger). */
  sourceEvents: LedgerEventRef[];
}

/** A requested change not yet in force, to be shown at its instant (change-requests/requestRecords.ts). */
export interface PendingTimelineChange {
  changeId: string;
  at: Date;
  planned: ControlPlaneEvent;
  proposer: string;
  reason: string | null;
}

interface Candidate {
  at: Date;
  cause: TimelineCause;
  actor: string;
  reason: string | null;
  position: string;
  changeId?: string;
  source?: LedgerEventRef;
}

const CAUSES: Partial<Record<ControlPlaneEvent['type'], TimelineCause>> = {
  TenantRegistered: 'TENANT_REGISTERED',
  TenantTierAssigned: 'TENANT_TIER_ASSIGNED',
  TenantOverrideSet: 'OVERRIDE_SET',
  TenantOverrideCleared: 'OVERRIDE_CLEARED',
  TierLimitSet: 'TIER_LIMIT_SET',
  TierLimitCleared: 'TIER_LIMIT_CLEARED',
  PlatformDefaultSet: 'PLATFORM_DEFAULT_SET',
};

export async function effectiveLimitTimeline(
  store: EventStore,
  query: { tenantId: string; dimension: Dimension; from: Date; to: Date; now?: Date; pending?: readonly PendingTimelineChange[] },
): Promise<EffectiveLimitChange[] | NotRegisteredAt> {
  const { tenantId, dimension, from, to, pending = [] } = query;
  const now = query.now ?? new Date();
  const tenantEvents = await store.readStream(tenantStream(tenantId));
  if (!tenantEvents.some((event) => event.type === 'TenantRegistered')) return { notRegistered: true, registeredAt: null };
  const tierIds = new Set<string>();
  for (const event of tenantEvents) {
    const tierId = (event.data as { tierId?: string | null }).tierId;
    if ((event.type === 'TenantRegistered' || event.type === 'TenantTierAssigned') && tierId) tierIds.add(tierId);
  }
  const streams = new Map<string, RecordedEvent[]>([
    [tenantStream(tenantId), tenantEvents],
    [PLATFORM_STREAM, await store.readStream(PLATFORM_STREAM)],
  ]);
  for (const tierId of tierIds) streams.set(tierStream(tierId), await store.readStream(tierStream(tierId)));
  // Requested changes not yet in force join their streams at their instants, after everything recorded (their
  // instants lie ahead), so the replay below shows what each would do to this tenant's effective limit.
  const requested: { stream: string; event: StreamEventLike }[] = [];
  for (const change of [...pending].sort((a, b) => a.at.getTime() - b.at.getTime())) {
    if (change.at.getTime() <= now.getTime()) continue;
    const data = change.planned.data as { tenantId?: string; tierId?: string };
    const stream = data.tenantId ? tenantStream(data.tenantId) : data.tierId ? tierStream(data.tierId) : PLATFORM_STREAM;
    if (!streams.has(stream)) continue;
    requested.push({
      stream,
      event: {
        stream,
        type: change.planned.type,
        data: change.planned.data,
        metadata: { actor: change.proposer, occurredAt: change.at.toISOString(), changeId: change.changeId, ...(change.reason ? { reason: change.reason } : {}) },
        recordedAt: change.at,
        position: { commit: 0n, prepare: 0n },
      },
    });
  }
  for (const { stream, event } of requested) streams.get(stream)!.push(event as RecordedEvent);

  const resolveAt = (at: Date) => {
    const view = viewOf(streams, at);
    const tenant = view.tenant(tenantId);
    if (!tenant) return null;
    const override = tenant.overrides[dimension];
    const tier = tenant.tierId === null ? undefined : view.tier(tenant.tierId);
    const resolved = resolveEffectiveLimit(dimension, {
      override: overrideApplies(override, at) ? override.value : undefined,
      tier: tier?.limits[dimension],
      platformDefault: view.platform.defaults[dimension],
    });
    return { ...resolved, tierId: tenant.tierId };
  };

  const candidates: Candidate[] = [];
  for (const events of streams.values()) {
    for (const stored of events) {
      const event = asControlPlaneEvent(stored);
      const cause = event && CAUSES[event.type];
      if (!event || !cause) continue;
      const eventDimension = (event.data as { dimension?: Dimension }).dimension;
      if (eventDimension !== undefined && eventDimension !== dimension) continue;
      const changeId = requested.some((each) => each.event === stored) ? String(stored.metadata.changeId) : undefined;
      const position = changeId ? `request:${changeId}` : formatPosition(stored.position);
      candidates.push({ at: occurredAt(stored), cause, actor: stored.metadata.actor ?? 'unknown', reason: stored.metadata.reason ?? null, position, ...(changeId ? { changeId } : { source: refOf(stored) }) });
      if (event.type === 'TenantOverrideSet' && event.data.expiresAt !== null) {
        candidates.push({
          at: new Date(event.data.expiresAt),
          cause: 'OVERRIDE_EXPIRED',
          actor: OVERRIDE_EXPIRY_ACTOR,
          reason: OVERRIDE_EXPIRY_REASON,
          position: `${position}:expired`,
          ...(changeId ? { changeId } : { source: refOf(stored) }),
        });
      }
    }
  }
  candidates.sort((a, b) => a.at.getTime() - b.at.getTime());

  const changes: EffectiveLimitChange[] = [];
  for (const candidate of candidates) {
    const time = candidate.at.getTime();
    if (time < from.getTime() || time > to.getTime() || (time > now.getTime() && !candidate.changeId)) continue;
    const before = resolveAt(new Date(time - 1));
    const after = resolveAt(candidate.at);
    if (!after) continue;
    if (before && before.source === after.source && sameValue(before.value, after.value)) continue;
    // Several events at one instant: the last one stands for the change.
    if (changes.at(-1)?.at.getTime() === time) changes.pop();
    changes.push({
      at: candidate.at,
      cause: candidate.cause,
      previous: before?.value ?? null,
      previousSource: before?.source ?? null,
      value: after.value,
      source: after.source,
      tierId: after.tierId,
      actor: candidate.actor,
      reason: candidate.reason,
      position: candidate.position,
      pending: candidate.changeId !== undefined,
      changeId: candidate.changeId ?? null,
      sourceEvents: candidate.source ? [candidate.source] : [],
    });
  }
  return changes;
}

function sameValue(a: LimitValue, b: LimitValue): boolean {
  return a.ratePerSecond === b.ratePerSecond && a.burst === b.burst && a.ceiling === b.ceiling;
}
