// Runs limit change requests: a limit command with effectiveFrom in the future, or one the approvals setting
// says needs a second operator, is recorded as a request (its own stream) instead of applied; the request is
// approved, rejected or withdrawn by operators, and applied at its instant (scheduler.ts) by running the
// command then, through the same runner as every command. Decisions on a request are appended at the request
// stream's expected revision, so an approval, a withdrawal and the instant's application cannot both win.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  limitChangeRequestStream,
  PLATFORM_STREAM,
  tierStream,
  WrongExpectedRevision,
  type EventStore,
  type LimitChangeCommand,
  type Position,
  type RecordedEvent,
} from '../../ledger/index.ts';
import { authorize, controlPlaneError, type Caller, type ControlPlaneCommand, type ControlPlaneError, type ControlPlaneResult } from '../controlPlaneCommand.ts';
import { setPlatformDefault } from '../platformCommands.ts';
import { clearTenantOverride, setTenantOverride } from '../tenantCommands.ts';
import { clearTierLimit, setTierLimit } from '../tierCommands.ts';
import { checkReason, isControlPlaneError } from '../validation.ts';
import { viewOf } from '../view.ts';
import {
  approvalsOf,
  checkApproval,
  checkApprovals,
  checkEffectiveFrom,
  checkOpen,
  inForceFrom,
  needsApproval,
  requestOf,
  stateOf,
  type LimitApprovalsInput,
  type LimitChangeRequest,
} from './requests.ts';

export { LIMIT_CHANGE_COMMANDS } from './requests.ts';

const DEFINITIONS: Record<LimitChangeCommand, ControlPlaneCommand<never>> = {
  setPlatformDefault,
  setTierLimit,
  clearTierLimit,
  setTenantOverride,
  clearTenantOverride,
} as Record<LimitChangeCommand, ControlPlaneCommand<never>>;

/** Who applies a scheduled change at its instant, in the request's stream (the change itself names its proposer). */
export const LIMIT_SCHEDULE_ACTOR = 'system:limit-schedule';
const CHANGE_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What the change appended at its instant says of the request it came from (its metadata.request). */
export interface RequestOrigin {
  changeId: string;
  proposedBy: string;
  proposedAt: string;
  proposerReason: string | null;
  effectiveFrom: string;
  approvedBy: string | null;
  approvedAt: string | null;
  approverReason: string | null;
}

/** How the runner is told it applies a request's change: at which instant, naming the request. */
export interface FromRequest {
  changeId: string;
  at: Date;
  request: RequestOrigin;
}

export type LimitChangeInput = Record<string, unknown> & { effectiveFrom?: Date | string | null };

export interface RequestOutcome {
  changeId: string;
  effectiveFrom: Date;
  approvalExpiresAt: Date | null;
  position: Position;
}

export type LimitChangeResult =
  | ControlPlaneResult
  | ({ status: 'pending-approval' } & RequestOutcome)
  | ({ status: 'scheduled' } & RequestOutcome);

export interface LimitChangeDecisionInput {
  changeId: string;
  reason?: string | null;
}

export interface LimitChangeDecisions {
  approveLimitChange(actor: Caller, input: LimitChangeDecisionInput): Promise<LimitChangeResult>;
  rejectLimitChange(actor: Caller, input: LimitChangeDecisionInput): Promise<LimitChangeResult>;
  withdrawLimitChange(actor: Caller, input: LimitChangeDecisionInput): Promise<LimitChangeResult>;
  setLimitApprovals(actor: Caller, input: LimitApprovalsInput): Promise<ControlPlaneResult>;
  /** Applies a scheduled request whose instant has come (any replica; the change is appended once). */
  applyLimitChange(changeId: string): Promise<LimitChangeResult>;
}

interface Options {
  store: EventStore;
  now: () => Date;
  maxAttempts: number;
  run<Input>(definition: ControlPlaneCommand<Input>, actor: Caller, input: Input, fromRequest?: FromRequest): Promise<ControlPlaneResult>;
}

const failed = (error: ControlPlaneError): ControlPlaneResult => ({ status: 'failed', error });

export function createLimitChangeRequests({ store, now, maxAttempts, run }: Options) {
  async function readStreams(names: readonly string[], into = new Map<string, RecordedEvent[]>()) {
    await Promise.all(names.filter((name) => !into.has(name)).map(async (name) => into.set(name, await store.readStream(name))));
    return into;
  }

  async function request(name: LimitChangeCommand, actor: Caller, given: LimitChangeInput): Promise<LimitChangeResult> {
    const { effectiveFrom: rawFrom, ...input } = given ?? {};
    const definition = DEFINITIONS[name];
    const plan = definition.plan(input as never);
    if (isControlPlaneError(plan)) return failed(plan);
    const forbidden = authorize(actor, definition, plan);
    if (forbidden) return failed(forbidden);
    const at = now();
    const effectiveFrom = checkEffectiveFrom(rawFrom, at);
    if (isControlPlaneError(effectiveFrom)) return failed(effectiveFrom);

    const streams = await readStreams([plan.target, ...plan.reads, PLATFORM_STREAM]);
    const tierId = typeof input.tenantId === 'string' ? viewOf(streams).tenant(input.tenantId)?.tierId : null;
    if (tierId) await readStreams([tierStream(tierId)], streams);
    const view = viewOf(streams);
    // The command decides now, on the state now, so bad input is refused now and nothing is recorded; it
    // decides again, on the state then, when the change takes effect.
    const decided = definition.decide(input as never, view, effectiveFrom ?? at);
    if (isControlPlaneError(decided)) return failed(decided);
    const approvals = approvalsOf(streams.get(PLATFORM_STREAM) ?? []);
    const approval = needsApproval(decided.event, approvals, view);
    if (!approval && effectiveFrom === null) return run(definition, actor, input as never);

    const changeId = randomUUID();
    const from = effectiveFrom ?? at;
    const approvalExpiresAt = approval ? new Date(at.getTime() + approvals.expirySeconds * 1000) : null;
    const appended = await store.append(
      limitChangeRequestStream(changeId),
      [
        {
          type: 'LimitChangeRequested',
          data: {
            changeId,
            command: name,
            input,
            planned: decided.event,
            effectiveFrom: from.toISOString(),
            needsApproval: approval,
            approvalExpiresAt: approvalExpiresAt?.toISOString() ?? null,
          },
          metadata: { actor: actor.id, actorRole: actor.role, occurredAt: at.toISOString(), ...(decided.reason ? { reason: decided.reason } : {}) },
        },
      ],
      { expectedRevision: 'no_stream' },
    );
    return { status: approval ? 'pending-approval' : 'scheduled', changeId, effectiveFrom: from, approvalExpiresAt, position: appended.position };
  }

  /** Appends one decision on a request at the revision read, deciding again when another decision got in first. */
  async function decideOnRequest(
    changeId: unknown,
    decide: (request: LimitChangeRequest | undefined, at: Date) => ControlPlaneError | { type: string; actor: Caller | null; reason?: string },
  ): Promise<{ request: LimitChangeRequest; position: Position } | ControlPlaneError> {
    if (typeof changeId !== 'string' || !CHANGE_ID_PATTERN.test(changeId)) {
      return controlPlaneError('InvalidInput', 'changeId is the id a limit change request answered', 'changeId');
    }
    const stream = limitChangeRequestStream(changeId);
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const events = await store.readStream(stream);
      const at = now();
      const decided = decide(requestOf(events), at);
      if (isControlPlaneError(decided)) return decided;
      const last = events.at(-1)!;
      const metadata = {
        actor: decided.actor?.id ?? LIMIT_SCHEDULE_ACTOR,
        actorRole: decided.actor?.role ?? 'SERVICE',
        occurredAt: at.toISOString(),
        ...(decided.reason ? { reason: decided.reason } : {}),
      };
      try {
        const appended = await store.append(stream, [{ type: decided.type, data: { changeId }, metadata }], { expectedRevision: last.revision });
        return { request: requestOf(await store.readStream(stream))!, position: appended.position };
      } catch (error) {
        if (!(error instanceof WrongExpectedRevision)) throw error;
        await sleep(Math.random() * Math.min(50, 2 * attempt));
      }
    }
    return controlPlaneError('ConcurrentEdit', `change ${String(changeId)} kept changing under ${maxAttempts} attempts; nothing was appended`);
  }

  function outcome(request: LimitChangeRequest, position: Position): LimitChangeResult {
    const pending = stateOf(request, now()) === 'PENDING_APPROVAL';
    return {
      status: pending ? 'pending-approval' : 'scheduled',
      changeId: request.changeId,
      effectiveFrom: inForceFrom(request),
      approvalExpiresAt: request.requested.approvalExpiresAt ? new Date(request.requested.approvalExpiresAt) : null,
      position,
    };
  }

  function operatorOnly(actor: Caller, what: string): ControlPlaneError | undefined {
    if (typeof actor?.id !== 'string' || actor.id.trim() === '') return controlPlaneError('Forbidden', 'the caller has no identity');
    return actor.role === 'OPERATOR' ? undefined : controlPlaneError('Forbidden', `role ${actor.role} may not ${what} limit changes`);
  }

  async function applyLimitChange(changeId: string): Promise<LimitChangeResult> {
    let decided = await decideOnRequest(changeId, (request, at) => {
      const open = checkOpen(request, changeId, at, ['SCHEDULED', 'APPLIED']);
      if (open && !/took effect/.test(open.message)) return open;
      if (request!.applied) return controlPlaneError('InvalidInput', 'already applied');
      if (inForceFrom(request!).getTime() > at.getTime()) {
        return controlPlaneError('InvalidInput', `change ${changeId} takes effect at ${inForceFrom(request!).toISOString()}`, 'changeId');
      }
      return { type: 'LimitChangeApplied', actor: null };
    });
    if (isControlPlaneError(decided)) {
      if (decided.message !== 'already applied') return failed(decided);
      // Another replica recorded it first: the change itself is appended once all the same (the runner's check).
      const request = requestOf(await store.readStream(limitChangeRequestStream(changeId)))!;
      decided = { request, position: { commit: 0n, prepare: 0n } as Position };
    }
    const { request } = decided;
    const proposer: Caller = { id: request.proposer.by, role: 'OPERATOR' };
    const result = await run(DEFINITIONS[request.requested.command], proposer, request.requested.input as never, {
      changeId,
      at: inForceFrom(request),
      request: {
        changeId,
        proposedBy: request.proposer.by,
        proposedAt: request.proposer.at.toISOString(),
        proposerReason: request.proposer.reason,
        effectiveFrom: request.requested.effectiveFrom,
        approvedBy: request.approved?.by ?? null,
        approvedAt: request.approved?.at.toISOString() ?? null,
        approverReason: request.approved?.reason ?? null,
      },
    });
    if (result.status === 'failed') {
      await store.append(limitChangeRequestStream(changeId), [
        {
          type: 'LimitChangeFailed',
          data: { changeId, error: result.error.message },
          metadata: { actor: LIMIT_SCHEDULE_ACTOR, actorRole: 'SERVICE', occurredAt: now().toISOString() },
        },
      ]);
    }
    return result;
  }

  const decisions: LimitChangeDecisions = {
    async approveLimitChange(actor, input) {
      const reason = checkReason(input?.reason, false);
      if (isControlPlaneError(reason)) return failed(reason);
      const decided = await decideOnRequest(input?.changeId, (request, at) => {
        const refused = checkApproval(actor, request, String(input.changeId), at);
        return refused ?? { type: 'LimitChangeApproved', actor, reason };
      });
      if (isControlPlaneError(decided)) return failed(decided);
      if (inForceFrom(decided.request).getTime() <= now().getTime()) return applyLimitChange(decided.request.changeId);
      return outcome(decided.request, decided.position);
    },
    async rejectLimitChange(actor, input) {
      const refused = operatorOnly(actor, 'reject');
      if (refused) return failed(refused);
      const reason = checkReason(input?.reason, true);
      if (isControlPlaneError(reason)) return failed(reason);
      const decided = await decideOnRequest(input?.changeId, (request, at) => {
        return checkOpen(request, String(input.changeId), at, ['PENDING_APPROVAL']) ?? { type: 'LimitChangeRejected', actor, reason };
      });
      if (isControlPlaneError(decided)) return failed(decided);
      return { status: 'applied', position: decided.position };
    },
    async withdrawLimitChange(actor, input) {
      const refused = operatorOnly(actor, 'withdraw');
      if (refused) return failed(refused);
      const reason = checkReason(input?.reason, false);
      if (isControlPlaneError(reason)) return failed(reason);
      const decided = await decideOnRequest(input?.changeId, (request, at) => {
        return checkOpen(request, String(input.changeId), at, ['PENDING_APPROVAL', 'SCHEDULED']) ?? { type: 'LimitChangeWithdrawn', actor, reason };
      });
      if (isControlPlaneError(decided)) return failed(decided);
      return { status: 'applied', position: decided.position };
    },
    async setLimitApprovals(actor, input) {
      const refused = operatorOnly(actor, 'set the approvals of');
      if (refused) return failed(refused);
      const approvals = checkApprovals(input ?? ({} as LimitApprovalsInput));
      if (isControlPlaneError(approvals)) return failed(approvals);
      const reason = checkReason(input.reason, false);
      if (isControlPlaneError(reason)) return failed(reason);
      for (let attempt = 1; attempt <= maxAttempts; attempt++) {
        const events = await store.readStream(PLATFORM_STREAM);
        const previous = events.some((event) => event.type === 'LimitApprovalsSet') ? approvalsOf(events) : null;
        const last = events.at(-1);
        const at = new Date(Math.max(now().getTime(), last ? Date.parse(String(last.metadata.occurredAt ?? 0)) || 0 : 0));
        const metadata = { actor: actor.id, actorRole: actor.role, occurredAt: at.toISOString(), ...(reason ? { reason } : {}) };
        try {
          const appended = await store.append(PLATFORM_STREAM, [{ type: 'LimitApprovalsSet', data: { previous, approvals }, metadata }], {
            expectedRevision: last ? last.revision : 'no_stream',
          });
          return { status: 'applied', position: appended.position };
        } catch (error) {
          if (!(error instanceof WrongExpectedRevision)) throw error;
          await sleep(Math.random() * Math.min(50, 2 * attempt));
        }
      }
      return failed(controlPlaneError('ConcurrentEdit', `${PLATFORM_STREAM} kept changing under ${maxAttempts} attempts; nothing was appended`));
    },
    applyLimitChange,
  };

  return { request, decisions };
}
