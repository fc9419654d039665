// What the console needs to lay the cascade out: the dimension catalog with its shipped defaults, the
// platform defaults, and per tenant every level with the one that wins and why. None of it is tenant data
// beyond Tenant.cascade, which the Tenant type's own scope guards.
import { acceptLimit, DIMENSION_CATALOG, DIMENSIONS } from '../../governance/index.ts';
import type { Dimension, DimensionSpec, LimitValue } from '../../governance/index.ts';
import { explainCascade, type CascadeLevelView, type CascadeView, loadPlatformDefaults } from '../../control-plane/index.ts';
import { builder } from '../builder.ts';
import { AllowanceEnum, DimensionEnum, LimitSourceEnum } from './enums.ts';
import { LimitValueType } from './limitValue.ts';
import { TenantType } from './tenant.ts';

const DimensionInfoType = builder.objectRef<DimensionSpec>('DimensionInfo').implement({
  description: 'One dimension of the catalog: what it counts, how it is limited, and the shipped default it never falls below.',
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (spec) => spec.dimension }),
    unit: t.exposeString('unit'),
    kind: t.exposeString('kind', { description: 'TOKEN_BUCKET, FIXED_WINDOW or COUNT_CEILING.' }),
    shippedDefault: t.field({ type: LimitValueType, resolve: (spec) => spec.shippedDefault }),
    allowances: t.field({ type: [AllowanceEnum], resolve: (spec) => [...spec.allowances] }),
    overLimit: t.exposeString('overLimit', { description: 'What traffic over the limit gets: SHED, REJECT, STABLE_DOWNSAMPLE or DROP_ACCEPTED.' }),
  }),
});

interface PlatformDefaultView {
  dimension: Dimension;
  value: LimitValue | null;
}

const PlatformDefaultType = builder.objectRef<PlatformDefaultView>('PlatformDefault').implement({
  description: 'The operator-set platform default of one dimension; value is null when none is set (the shipped default applies).',
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (platform) => platform.dimension }),
    value: t.field({ type: LimitValueType, nullable: true, resolve: (platform) => platform.value }),
  }),
});

const CascadeLevelType = builder.objectRef<CascadeLevelView>('CascadeLevel').implement({
  fields: (t) => ({
    source: t.field({ type: LimitSourceEnum, resolve: (level) => level.source }),
    value: t.field({ type: LimitValueType, nullable: true, description: 'Null when the level holds nothing usable.', resolve: (level) => level.value }),
    unusable: t.exposeBoolean('unusable', { description: 'Something is stored here that the fail-safe rule skips.' }),
  }),
});

const CascadeDimensionType = builder.objectRef<CascadeView>('CascadeDimension').implement({
  description: 'One dimension of a tenant’s cascade: override → tier → platform default → shipped default.',
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (view) => view.dimension }),
    levels: t.field({ type: [CascadeLevelType], resolve: (view) => view.levels }),
    winner: t.field({ type: LimitSourceEnum, resolve: (view) => view.winner }),
    value: t.field({ type: LimitValueType, resolve: (view) => view.value }),
    reason: t.exposeString('reason', { description: 'Why the winner won, e.g. "no override → tier value not set → platform default".' }),
  }),
});

builder.objectField(TenantType, 'cascade', (t) =>
  t.field({
    type: [CascadeDimensionType],
    description: 'Every dimension’s cascade for this tenant now, with the level that wins and why.',
    resolve: async (tenant, _args, context) => (await explainCascade(context.db, tenant.tenantId)) ?? [],
  }),
);

builder.queryFields((t) => ({
  dimensions: t.field({
    type: [DimensionInfoType],
    description: 'The dimension catalog.',
    resolve: () => DIMENSIONS.map((dimension) => DIMENSION_CATALOG[dimension]),
  }),
  platformDefaults: t.field({
    type: [PlatformDefaultType],
    description: 'The platform default of every dimension, as the cascade reads it.',
    resolve: async (_root, _args, context) => {
      const stored = await loadPlatformDefaults(context.db);
      return DIMENSIONS.map((dimension) => ({ dimension, value: acceptLimit(dimension, stored[dimension]) ?? null }));
    },
  }),
}));
