import { builder } from '../builder.ts';
import { listTierRecords, loadTierRecords, type TierRecord } from '../readModels.ts';
import { DimensionEnum } from './enums.ts';
import { LimitValueType } from './limitValue.ts';

type TierLimit = TierRecord['limits'][number];

const TierLimitType = builder.objectRef<TierLimit>('TierLimit').implement({
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (limit) => limit.dimension }),
    value: t.field({ type: LimitValueType, resolve: (limit) => limit.value }),
  }),
});

export const TierType = builder.loadableObject('Tier', {
  description: 'Operator-defined packaging: the default ceilings a class of tenants inherits.',
  load: async (tierIds: string[], context): Promise<Array<TierRecord | Error>> => {
    const byId = await loadTierRecords(context.db, tierIds);
    return tierIds.map((tierId) => byId.get(tierId) ?? new Error(`tier ${tierId} is not defined`));
  },
  fields: (t) => ({
    id: t.exposeID('tierId'),
    name: t.exposeString('name'),
    limits: t.field({ type: [TierLimitType], description: 'The dimensions this tier sets; others fall through to the platform default.', resolve: (tier) => tier.limits }),
    shadowLimits: t.field({
      type: [TierLimitType],
      description: 'The shadow limits set on this tier (mode SHADOW): decided beside the enforced ones for the tenants the tier governs, refusing nothing.',
      resolve: (tier) => tier.shadowLimits,
    }),
  }),
});

builder.queryFields((t) => ({
  tiers: t.field({
    type: [TierType],
    description: 'Every tier, in id order.',
    authScopes: { readEverything: true },
    resolve: (_root, _args, context) => listTierRecords(context.db),
  }),
}));
