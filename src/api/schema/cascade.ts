// What the console needs to lay the cascade out: the dimension catalog with its shipped defaults, the
// platform defaults, and per tenant every level with the one that wins and why. None of it is tenant data
// beyond Tenant.cascade, which the Tenant type's own scope guards.
import { acceptLimit, DIMENSION_CATALOG, DIMENSIONS, shadowOf } from '../../governance/index.ts';
import type { Allowance, Dimension, DimensionSpec, LimitValue } from '../../governance/index.ts';
import { explainCascade, type CascadeLevelView, type CascadeView, loadPlatformDefaults } from '../../control-plane/index.ts';
import { builder } from '../builder.ts';
import { AllowanceEnum, DimensionEnum, LimitSourceEnum } from './enums.ts';
import { LimitValueType } from './limitValue.ts';
import { TenantType } from './tenant.ts';

/**
 * What a sender sees when an allowance is over its limit: the catalog's behaviour, as each door answers it
 * (the doors' READMEs). The behaviour alone misleads: INGEST is SHED by default, yet HTTP ingest answers 429.
 */
const ANSWER_BY_ALLOWANCE: Record<Allowance, string> = {
  HTTP: 'HTTP 429 with Retry-After and RateLimit fields; 413 when one request is larger than the burst',
  INTEGRATIONS: 'HTTP 202 {"accepted": 0, "dropped": N}: dropped, counted as shed',
  LIVE: 'MQTT: acknowledged to the broker and dropped, counted as shed',
  BACKLOG: 'MQTT: acknowledged to the broker and dropped, counted as shed',
  SPARKPLUG: 'Sparkplug B: acknowledged to the broker and dropped, counted as shed',
  LWM2M: 'CoAP 4.29 with Max-Age (the seconds until there is room)',
  DETECTION: 'the enforcement point is told admitted: false and drops the action (POST /v1/admissions)',
  CONNECTORS: 'the enforcement point is told admitted: false and drops the action (POST /v1/admissions)',
};
const ANSWER_WITHOUT_ALLOWANCE = 'the caller is told admitted: false with retryAfterSeconds (POST /v1/admissions, Envoy: 429)';

interface AllowanceOverLimitView {
  allowance: Allowance | null;
  overLimit: string;
  answer: string;
}

const AllowanceOverLimitType = builder.objectRef<AllowanceOverLimitView>('AllowanceOverLimit').implement({
  description: 'What traffic over the limit gets on one allowance, and what the sender sees.',
  fields: (t) => ({
    allowance: t.field({ type: AllowanceEnum, nullable: true, description: 'Null for a dimension without allowances.', resolve: (each) => each.allowance }),
    overLimit: t.exposeString('overLimit', { description: 'SHED, REJECT, STABLE_DOWNSAMPLE or DROP_ACCEPTED.' }),
    answer: t.exposeString('answer', { description: 'What the sender sees, in words.' }),
  }),
});

function overLimitByAllowance(spec: DimensionSpec): AllowanceOverLimitView[] {
  if (spec.allowances.length === 0) return [{ allowance: null, overLimit: spec.overLimit, answer: spec.kind === 'COUNT_CEILING' ? 'CommandRejected (CEILING_REACHED), retryable' : ANSWER_WITHOUT_ALLOWANCE }];
  return spec.allowances.map((allowance) => ({
    allowance,
    overLimit: spec.overLimitByAllowance[allowance] ?? spec.overLimit,
    answer: ANSWER_BY_ALLOWANCE[allowance],
  }));
}

const DimensionInfoType = builder.objectRef<DimensionSpec>('DimensionInfo').implement({
  description: 'One dimension of the catalog: what it counts, how it is limited, and the shipped default it never falls below.',
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (spec) => spec.dimension }),
    unit: t.exposeString('unit'),
    kind: t.exposeString('kind', { description: 'TOKEN_BUCKET, FIXED_WINDOW or COUNT_CEILING.' }),
    shippedDefault: t.field({ type: LimitValueType, resolve: (spec) => spec.shippedDefault }),
    allowances: t.field({ type: [AllowanceEnum], resolve: (spec) => [...spec.allowances] }),
    overLimit: t.exposeString('overLimit', {
      description: 'What traffic over the limit gets by default: SHED, REJECT, STABLE_DOWNSAMPLE or DROP_ACCEPTED. Allowances may differ: see overLimitByAllowance.',
    }),
    overLimitByAllowance: t.field({ type: [AllowanceOverLimitType], description: 'Per allowance: the behaviour and what the sender sees.', resolve: overLimitByAllowance }),
  }),
});

interface PlatformDefaultView {
  dimension: Dimension;
  value: LimitValue | null;
  shadow: LimitValue | null;
}

const PlatformDefaultType = builder.objectRef<PlatformDefaultView>('PlatformDefault').implement({
  description: 'The operator-set platform default of one dimension; value is null when none is set (the shipped default applies).',
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (platform) => platform.dimension }),
    value: t.field({ type: LimitValueType, nullable: true, resolve: (platform) => platform.value }),
    shadow: t.field({
      type: LimitValueType,
      nullable: true,
      description: 'The shadow limit set beside it (mode SHADOW): decided for the tenants the platform default governs, refusing nothing; null when none.',
      resolve: (platform) => platform.shadow,
    }),
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
      return DIMENSIONS.map((dimension) => ({ dimension, value: acceptLimit(dimension, stored[dimension]) ?? null, shadow: shadowOf(dimension, stored[dimension]) ?? null }));
    },
  }),
}));
