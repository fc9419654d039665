// Scheduled limit changes and two-person approval (src/control-plane/change-requests): the requests an
// operator approves, rejects or withdraws, the approvals setting, and what a limit mutation answers when it
// does not apply at once (PendingApproval, ScheduledLimitChange). As for every mutation, an outcome that is
// not Applied is a member of the payload union; throwing is only the errors plugin's way of picking it.
import { builder } from '../builder.ts';
import type { ApiContext } from '../context.ts';
import {
  approvalsOf,
  listLimitChangeRequests,
  type LimitChangeRequestRecord,
  type LimitChangeRequestState,
  type LimitChangeResult,
  type RequestOrigin,
} from '../../control-plane/index.ts';
import { formatPosition, PLATFORM_STREAM, type LimitApprovals } from '../../ledger/index.ts';
import { applied, AppliedType } from './applyResult.ts';
import { ConcurrentEdit, Forbidden, InvalidInput, InvalidLimit, UnknownTenant, UnknownTier } from './errorClasses.ts';
import { DimensionEnum, LimitModeEnum } from './enums.ts';
import { LimitValueType } from './limitValue.ts';
import { EffectiveLimitType } from './effectiveLimit.ts';
import { LimitChangeType } from './limitHistory.ts';

/** A limit change recorded as a request: it waits for a second operator. */
export class PendingApproval extends Error {
  constructor(readonly outcome: Extract<LimitChangeResult, { status: 'pending-approval' }>) {
    super(`change ${outcome.changeId} waits for a second operator's approval`);
  }
}

/** A limit change recorded as a request: it takes effect at effectiveFrom. */
export class ScheduledLimitChange extends Error {
  constructor(readonly outcome: Extract<LimitChangeResult, { status: 'scheduled' }>) {
    super(`change ${outcome.changeId} takes effect at ${outcome.effectiveFrom.toISOString()}`);
  }
}

/** Applied, or the request a limit mutation recorded instead; failures as applied() answers them. */
export function limitChangeOutcome(result: LimitChangeResult) {
  if (result.status === 'pending-approval') throw new PendingApproval(result);
  if (result.status === 'scheduled') throw new ScheduledLimitChange(result);
  return applied(result);
}

const requestFields = {
  changeId: 'The request, as approveLimitChange, rejectLimitChange and withdrawLimitChange name it.',
} as const;

builder.objectType(PendingApproval, {
  name: 'PendingApproval',
  description:
    'The change needs a second operator (the approvals setting): it was recorded as a request and applies once another OPERATOR ' +
    'approves it (approveLimitChange), at effectiveFrom or at the approval if later. Unapproved at approvalExpiresAt, it expires.',
  fields: (t) => ({
    changeId: t.id({ description: requestFields.changeId, resolve: (pending) => pending.outcome.changeId }),
    effectiveFrom: t.field({ type: 'DateTime', resolve: (pending) => pending.outcome.effectiveFrom }),
    approvalExpiresAt: t.field({ type: 'DateTime', nullable: true, resolve: (pending) => pending.outcome.approvalExpiresAt }),
    position: t.string({ description: 'Where the request stands in the ledger.', resolve: (pending) => formatPosition(pending.outcome.position) }),
  }),
});

builder.objectType(ScheduledLimitChange, {
  name: 'ScheduledLimitChange',
  description:
    'The change takes effect at effectiveFrom, in every replica at that instant by its own timer; until then it is listed by ' +
    'limitChangeRequests and EffectiveLimit.pending, and withdrawLimitChange withdraws it.',
  fields: (t) => ({
    changeId: t.id({ description: requestFields.changeId, resolve: (scheduled) => scheduled.outcome.changeId }),
    effectiveFrom: t.field({ type: 'DateTime', resolve: (scheduled) => scheduled.outcome.effectiveFrom }),
    position: t.string({ description: 'Where the request stands in the ledger.', resolve: (scheduled) => formatPosition(scheduled.outcome.position) }),
  }),
});

export const LIMIT_CHANGE_OUTCOMES = [PendingApproval, ScheduledLimitChange];

const LimitChangeRequestStateEnum = builder.enumType('LimitChangeRequestState', {
  description: 'Where a limit change request stands. EXPIRED: unapproved at its approvalExpiresAt (read at the instant asked).',
  values: ['PENDING_APPROVAL', 'SCHEDULED', 'APPLIED', 'REJECTED', 'WITHDRAWN', 'EXPIRED', 'FAILED'] as const,
});

/** A request to set a shadow limit (mode SHADOW) carries the level's whole value: the shadow is what it changes. */
const modeOf = (request: LimitChangeRequestRecord): 'ENFORCE' | 'SHADOW' => ((request.planned.data as { mode?: string }).mode === 'SHADOW' ? 'SHADOW' : 'ENFORCE');

const LimitChangeRequestType = builder.objectRef<LimitChangeRequestRecord>('LimitChangeRequest').implement({
  description: 'A limit change that did not apply at once: scheduled for later, or waiting for (or decided by) a second operator.',
  fields: (t) => ({
    changeId: t.exposeID('changeId', { description: requestFields.changeId }),
    command: t.exposeString('command', { description: 'The mutation requested: setTierLimit, clearTenantOverride, ...' }),
    state: t.field({ type: LimitChangeRequestStateEnum, resolve: (request) => request.state }),
    tenantId: t.exposeID('tenantId', { nullable: true }),
    tierId: t.exposeID('tierId', { nullable: true }),
    dimension: t.field({ type: DimensionEnum, resolve: (request) => request.dimension }),
    mode: t.field({
      type: LimitModeEnum,
      description: 'SHADOW: it sets a shadow limit (value and previous are shadow limits), which refuses nothing.',
      resolve: (request) => modeOf(request),
    }),
    value: t.field({
      type: LimitValueType,
      nullable: true,
      description: 'The limit it sets; null for a clear.',
      resolve: (request) => {
        if (!('value' in request.planned.data)) return null;
        const value = request.planned.data.value as { shadow?: unknown };
        return (modeOf(request) === 'SHADOW' ? (value.shadow ?? null) : value) as never;
      },
    }),
    previous: t.field({
      type: LimitValueType,
      nullable: true,
      description: 'The limit it replaces, as of the request.',
      resolve: (request) => {
        const previous = (request.planned.data as { previous?: unknown }).previous as { value?: unknown } | null | undefined;
        if (!previous) return null;
        const level = (request.targetKind === 'tenant' ? previous.value : previous) as { shadow?: unknown } | null | undefined;
        return (modeOf(request) === 'SHADOW' ? (level?.shadow ?? null) : level) as never;
      },
    }),
    effectiveFrom: t.field({ type: 'DateTime', resolve: (request) => request.effectiveFrom }),
    needsApproval: t.exposeBoolean('needsApproval'),
    approvalExpiresAt: t.field({ type: 'DateTime', nullable: true, resolve: (request) => request.approvalExpiresAt }),
    proposer: t.exposeString('proposer', { description: "The proposing operator (the token's subject)." }),
    proposerReason: t.exposeString('proposerReason', { nullable: true }),
    proposedAt: t.field({ type: 'DateTime', resolve: (request) => request.proposedAt }),
    decidedBy: t.exposeString('decidedBy', { nullable: true, description: 'Who approved, rejected or withdrew it.' }),
    decisionReason: t.exposeString('decisionReason', { nullable: true }),
    decidedAt: t.field({ type: 'DateTime', nullable: true, resolve: (request) => request.decidedAt }),
    appliedAt: t.field({ type: 'DateTime', nullable: true, resolve: (request) => request.appliedAt }),
    error: t.exposeString('error', { nullable: true, description: 'FAILED: why the command refused at the instant.' }),
    approvableByViewer: t.boolean({
      description: 'Whether the caller may approve it now: an OPERATOR other than the proposer, while it waits.',
      resolve: (request, _args, context) =>
        request.state === 'PENDING_APPROVAL' && context.actor.role === 'OPERATOR' && context.actor.id !== request.proposer,
    }),
  }),
});

const LimitApprovalsType = builder.objectRef<LimitApprovals>('LimitApprovals').implement({
  description: 'Which limit changes need a second operator, and how long a request waits for one.',
  fields: (t) => ({
    tierChanges: t.exposeBoolean('tierChanges', { description: 'Every setTierLimit and clearTierLimit.' }),
    platformChanges: t.exposeBoolean('platformChanges', { description: 'Every setPlatformDefault.' }),
    overrideAboveTimes: t.exposeFloat('overrideAboveTimes', {
      nullable: true,
      description: "An override whose rate (or ceiling) is above this many times the tenant's limit without it (tier, else platform default).",
    }),
    expirySeconds: t.exposeInt('expirySeconds', { description: 'An unapproved request expires this long after it was made.' }),
  }),
});

const LimitChangeApprovalType = builder.objectRef<RequestOrigin>('LimitChangeApproval').implement({
  description: 'Where a change came from when it came from a request: who proposed it and who approved it, why and when.',
  fields: (t) => ({
    changeId: t.exposeID('changeId'),
    proposedBy: t.exposeString('proposedBy'),
    proposedAt: t.field({ type: 'DateTime', resolve: (origin) => new Date(origin.proposedAt) }),
    proposerReason: t.exposeString('proposerReason', { nullable: true }),
    effectiveFrom: t.field({ type: 'DateTime', resolve: (origin) => new Date(origin.effectiveFrom) }),
    approvedBy: t.exposeString('approvedBy', { nullable: true, description: 'null: it needed no approval (scheduled only).' }),
    approvedAt: t.field({ type: 'DateTime', nullable: true, resolve: (origin) => (origin.approvedAt ? new Date(origin.approvedAt) : null) }),
    approverReason: t.exposeString('approverReason', { nullable: true }),
  }),
});

builder.objectFields(LimitChangeType, (t) => ({
  approval: t.field({
    type: LimitChangeApprovalType,
    nullable: true,
    description: 'Set when the change came from a request (scheduled, or approved by a second operator).',
    resolve: (change) => change.approval,
  }),
}));

const OPEN_STATES: LimitChangeRequestState[] = ['PENDING_APPROVAL', 'SCHEDULED'];
const openRequestsByContext = new WeakMap<ApiContext, Map<string, Promise<LimitChangeRequestRecord[]>>>();

/** The open requests that touch a tenant's limits (its overrides, its tier, the platform), once per request. */
function openRequestsOf(context: ApiContext, tenantId: string): Promise<LimitChangeRequestRecord[]> {
  let byTenant = openRequestsByContext.get(context);
  if (!byTenant) openRequestsByContext.set(context, (byTenant = new Map()));
  let found = byTenant.get(tenantId);
  if (!found) byTenant.set(tenantId, (found = listLimitChangeRequests(context.db, { tenantId, states: OPEN_STATES, first: 100 })));
  return found;
}

builder.objectFields(EffectiveLimitType, (t) => ({
  pending: t.field({
    type: [LimitChangeRequestType],
    description: 'Changes to this limit that are requested but not in force: scheduled for later, or waiting for approval.',
    resolve: async (limit, _args, context) => {
      if (!limit.tenantId) return [];
      return (await openRequestsOf(context, limit.tenantId)).filter((request) => request.dimension === limit.dimension);
    },
  }),
}));

builder.queryFields((t) => ({
  limitChangeRequests: t.field({
    type: [LimitChangeRequestType],
    description: 'Limit change requests, newest first: the approval queue (states: [PENDING_APPROVAL]), scheduled changes, and decided ones.',
    args: {
      states: t.arg({ type: [LimitChangeRequestStateEnum] }),
      tenantId: t.arg.id({ description: "Requests touching this tenant's limits: its overrides, its tier, the platform." }),
      tierId: t.arg.id(),
      first: t.arg.int({ description: 'At most this many (default 50, at most the page size limit).' }),
    },
    authScopes: { readEverything: true },
    resolve: (_root, args, context) =>
      listLimitChangeRequests(context.db, {
        states: args.states ?? null,
        tenantId: args.tenantId ?? null,
        tierId: args.tierId ?? null,
        ...(args.first === null || args.first === undefined ? {} : { first: args.first }),
      }),
  }),
  limitApprovals: t.field({
    type: LimitApprovalsType,
    description: 'The approvals setting as the ledger holds it (setLimitApprovals).',
    authScopes: { readEverything: true },
    resolve: async (_root, _args, context) => approvalsOf(await context.store.readStream(PLATFORM_STREAM)),
  }),
}));

const LimitChangeDecisionInput = builder.inputType('LimitChangeDecisionInput', {
  fields: (t) => ({
    changeId: t.id({ required: true, description: requestFields.changeId }),
    reason: t.string({ description: 'Kept in the ledger beside the decision; required to reject.' }),
  }),
});

const SetLimitApprovalsInput = builder.inputType('SetLimitApprovalsInput', {
  fields: (t) => ({
    tierChanges: t.boolean({ required: true }),
    platformChanges: t.boolean({ required: true }),
    overrideAboveTimes: t.float({ description: "1 to 1,000,000; null: no override needs approval." }),
    expirySeconds: t.int({ description: 'How long a request waits for approval: 60 s to 30 days; default 86,400 (24 h).' }),
    reason: t.string(),
  }),
});

type Decision = 'approveLimitChange' | 'rejectLimitChange' | 'withdrawLimitChange';
const DECISIONS: Record<Decision, string> = {
  approveLimitChange:
    'A second OPERATOR approves a request: it applies now (Applied) or at its effectiveFrom (ScheduledLimitChange). The proposer ' +
    'cannot approve their own (Forbidden); an expired, rejected, withdrawn or applied request answers InvalidInput.',
  rejectLimitChange: 'An OPERATOR rejects a request waiting for approval, with a reason (required).',
  withdrawLimitChange: 'An OPERATOR withdraws a request before it takes effect: waiting for approval, or scheduled and not yet in force.',
};

for (const [name, description] of Object.entries(DECISIONS) as [Decision, string][]) {
  builder.mutationField(name, (t) =>
    t.field({
      type: AppliedType,
      description,
      args: { input: t.arg({ type: LimitChangeDecisionInput, required: true }) },
      errors: {
        types: [Forbidden, InvalidInput, ConcurrentEdit, InvalidLimit, UnknownTenant, UnknownTier, ScheduledLimitChange],
        directResult: true,
        union: { name: `${name[0]!.toUpperCase()}${name.slice(1)}Payload` },
      },
      resolve: async (_root, { input }, context) =>
        limitChangeOutcome(await context.controlPlane[name](context.actor, { changeId: String(input.changeId), reason: input.reason ?? null })),
    }),
  );
}

builder.mutationField('setLimitApprovals', (t) =>
  t.field({
    type: AppliedType,
    description: 'An OPERATOR sets which limit changes need a second operator; recorded in the ledger (platform stream).',
    args: { input: t.arg({ type: SetLimitApprovalsInput, required: true }) },
    errors: { types: [Forbidden, InvalidInput, ConcurrentEdit], directResult: true, union: { name: 'SetLimitApprovalsPayload' } },
    resolve: async (_root, { input }, context) => applied(await context.controlPlane.setLimitApprovals(context.actor, input)),
  }),
);
