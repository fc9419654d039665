// effectiveLimitTimeline: the auditor's answer to "what changed acme's limit", whichever level changed it.
import { builder } from '../builder.ts';
import { GraphQLError } from '../graphql.ts';
import { UnknownTenantError } from '../queryErrors.ts';
import { effectiveLimitTimeline, instantOf, listLimitChangeRequests, type EffectiveLimitChange } from '../../control-plane/index.ts';
import { DimensionEnum, LimitSourceEnum } from './enums.ts';
import { LimitValueType } from './limitValue.ts';
import { LedgerEventRefType } from './ledgerEventRef.ts';

const EffectiveLimitCauseEnum = builder.enumType('EffectiveLimitCause', {
  description: 'The event that moved a tenant’s effective limit.',
  values: [
    'TENANT_REGISTERED',
    'TENANT_TIER_ASSIGNED',
    'OVERRIDE_SET',
    'OVERRIDE_CLEARED',
    'OVERRIDE_EXPIRED',
    'TIER_LIMIT_SET',
    'TIER_LIMIT_CLEARED',
    'PLATFORM_DEFAULT_SET',
  ] as const,
});

const EffectiveLimitChangeType = builder.objectRef<EffectiveLimitChange>('EffectiveLimitChange').implement({
  description: 'One change of a tenant’s effective limit: the value before and after, the level that now wins, and the event that caused it.',
  fields: (t) => ({
    at: t.field({ type: 'DateTime', resolve: (change) => change.at }),
    cause: t.field({ type: EffectiveLimitCauseEnum, resolve: (change) => change.cause }),
    previous: t.field({ type: LimitValueType, nullable: true, description: 'The effective value it replaced; null only at registration.', resolve: (change) => change.previous }),
    previousSource: t.field({ type: LimitSourceEnum, nullable: true, resolve: (change) => change.previousSource }),
    value: t.field({ type: LimitValueType, resolve: (change) => change.value }),
    source: t.field({ type: LimitSourceEnum, description: 'The level of the cascade that wins from then on.', resolve: (change) => change.source }),
    tierId: t.exposeID('tierId', { nullable: true, description: 'The tenant’s tier from then on.' }),
    actor: t.exposeString('actor', { description: 'Who caused it; a lapse names system:override-expiry.' }),
    reason: t.exposeString('reason', { nullable: true }),
    position: t.exposeString('position', { description: 'Ledger position of the causing event (a lapse adds :expired; a pending change: request:<changeId>).' }),
    pending: t.exposeBoolean('pending', {
      description: 'A requested change not yet in force (scheduled, or waiting for approval): what it will do at its instant, if nothing else changes first.',
    }),
    changeId: t.exposeID('changeId', { nullable: true, description: 'The request of a pending change (limitChangeRequests).' }),
    sourceEvents: t.field({
      type: [LedgerEventRefType],
      description: 'The event that caused it (a lapse: the one that set the override), to prove with ledgerInclusionProof.',
      resolve: (change) => change.sourceEvents,
    }),
  }),
});

builder.queryFields((t) => ({
  effectiveLimitTimeline: t.field({
    type: [EffectiveLimitChangeType],
    description:
      'Every change of a tenant’s effective limit in one dimension over [from, to], oldest first, whatever level caused it: override set, cleared or expired; tier reassigned; tier limit set or cleared; platform default changed. Replayed from the ledger.',
    args: {
      tenantId: t.arg.id({ required: true }),
      dimension: t.arg({ type: DimensionEnum, required: true }),
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
    },
    authScopes: (_root, { tenantId }) => ({ auditTenant: tenantId }),
    resolve: async (_root, { tenantId, dimension, from, to }, { store, db }) => {
      if (to.getTime() < from.getTime()) throw new GraphQLError('to must not be before from', { extensions: { code: 'BAD_USER_INPUT', field: 'to' } });
      const requests = await listLimitChangeRequests(db, { tenantId, states: ['SCHEDULED', 'PENDING_APPROVAL'], first: 100 });
      const pending = requests
        .filter((request) => request.dimension === dimension)
        .map((request) => ({ changeId: request.changeId, at: instantOf(request), planned: request.planned, proposer: request.proposer, reason: request.proposerReason }));
      const changes = await effectiveLimitTimeline(store, { tenantId, dimension, from, to, pending });
      if ('notRegistered' in changes) throw new UnknownTenantError(tenantId);
      return changes;
    },
  }),
}));
