import { builder } from '../builder.ts';
import { tenantLimitsAt, type TenantLimit } from '../readModels.ts';
import { NotRegisteredAtError, UnknownTenantError } from '../queryErrors.ts';
import type { ApiContext } from '../context.ts';
import { DimensionEnum, LimitModeEnum, LimitSourceEnum } from './enums.ts';
import { LimitValueType } from './limitValue.ts';
import { LedgerEventRefType } from './ledgerEventRef.ts';

type Shadow = NonNullable<TenantLimit['shadow']>;

const ShadowLimitType = builder.objectRef<Shadow>('ShadowLimit').implement({
  description: 'A limit set with mode SHADOW: decided beside the enforced one, refusing nothing; what it would have refused is counted.',
  fields: (t) => ({
    value: t.field({ type: LimitValueType, resolve: (shadow) => shadow.value }),
    source: t.field({ type: LimitSourceEnum, description: 'The level whose shadow it is (TENANT_OVERRIDE, TIER or PLATFORM_DEFAULT).', resolve: (shadow) => shadow.source }),
    mode: t.field({ type: LimitModeEnum, resolve: () => 'SHADOW' as const }),
  }),
});

export const EffectiveLimitType = builder.objectRef<TenantLimit>('EffectiveLimit').implement({
  description: 'The limit in force for one dimension, and the level of the cascade that supplied it.',
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (limit) => limit.dimension }),
    value: t.field({ type: LimitValueType, resolve: (limit) => limit.value }),
    source: t.field({ type: LimitSourceEnum, resolve: (limit) => limit.source }),
    tierId: t.id({ nullable: true, resolve: (limit) => limit.tierId }),
    mode: t.field({ type: LimitModeEnum, description: 'ENFORCE: value is the limit in force.', resolve: () => 'ENFORCE' as const }),
    shadow: t.field({
      type: ShadowLimitType,
      nullable: true,
      description: 'The shadow limit watching this dimension beside the enforced one (promoteShadowLimit enforces it); null when none.',
      resolve: (limit) => limit.shadow ?? null,
    }),
    sourceEvents: t.field({
      type: [LedgerEventRefType],
      nullable: true,
      description:
        'effectiveLimitsAt only (null elsewhere): the ledger events that decide it, to prove with ledgerInclusionProof: the tenant’s registration or last tier assignment, and the event that set the winning level’s value (none for the shipped default).',
      resolve: (limit) => limit.sourceEvents ?? null,
    }),
  }),
});

/** One read for every tenant of a request, whichever fields asked (Query.effectiveLimits, Tenant.effectiveLimits). */
export async function loadEffectiveLimitsBatch(tenantIds: readonly string[], context: ApiContext): Promise<Array<TenantLimit[] | Error>> {
  const byTenant = await context.effectiveLimits.load(context.db, tenantIds);
  return tenantIds.map((tenantId) => byTenant.get(tenantId) ?? new UnknownTenantError(tenantId));
}

builder.queryFields((t) => ({
  effectiveLimits: t.loadableList({
    type: EffectiveLimitType,
    description: 'The limits in force for a tenant now, one per dimension.',
    args: { tenantId: t.arg.id({ required: true }) },
    authScopes: (_root, { tenantId }) => ({ readTenant: tenantId }),
    load: (tenantIds: string[], context) => loadEffectiveLimitsBatch(tenantIds, context),
    resolve: (_root, { tenantId }) => tenantId,
  }),
  effectiveLimitsAt: t.field({
    type: [EffectiveLimitType],
    description:
      'The limits that were in force for a tenant at a past instant, replayed from the ledger. An instant before the tenant was registered answers the error NOT_REGISTERED_AT (with registeredAt when it was registered later).',
    args: { tenantId: t.arg.id({ required: true }), at: t.arg({ type: 'DateTime', required: true }) },
    authScopes: (_root, { tenantId }) => ({ auditTenant: tenantId }),
    resolve: async (_root, { tenantId, at }, context) => {
      const limits = await tenantLimitsAt(context, tenantId, at);
      if ('notRegistered' in limits) throw new NotRegisteredAtError(tenantId, at, limits.registeredAt);
      return limits;
    },
  }),
}));
