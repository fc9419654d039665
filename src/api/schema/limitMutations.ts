// The control plane's commands as mutations. Each takes `input`, appends one event or nothing, and answers a
// payload union: Applied with the ledger position, or one of the typed errors. The control plane decides
// who may run what (operators everything, tenant admins their own tenant's choices), so these fields only
// pass the caller's identity along.
import { builder } from '../builder.ts';
import type { ApiContext } from '../context.ts';
import { AppliedType, CONTROL_PLANE_ERRORS } from './applyResult.ts';
import { LIMIT_CHANGE_COMMANDS, type LimitChangeResult } from '../../control-plane/index.ts';
import { LIMIT_CHANGE_OUTCOMES, limitChangeOutcome } from './limitChangeRequests.ts';
import { DimensionEnum, LimitModeEnum, QuotaPeriodEnum } from './enums.ts';
import { REFUSAL_RULE } from './errors.ts';
import { DIMENSION_CATALOG, LIMIT_MAX } from '../../governance/index.ts';

/** What leaving out burst gives, per token-bucket dimension, from the catalog the cascade uses (acceptLimit). */
const BURST_WHEN_LEFT_OUT = Object.values(DIMENSION_CATALOG)
  .filter((spec) => spec.kind === 'TOKEN_BUCKET')
  .map((spec) => `${spec.dimension} ${spec.shippedDefault.burst! / spec.shippedDefault.ratePerSecond!} x`)
  .join(', ');
export const BURST_DESCRIPTION =
  'The most one request can take at once (token bucket size). Left out, it is ratePerSecond times the dimension\'s ' +
  `shipped burst/rate ratio (${BURST_WHEN_LEFT_OUT} the rate; capped at ${LIMIT_MAX.toLocaleString('en')}), so a rate alone ` +
  'allows bursts of twice the rate on INGEST: give burst to allow less.';

const EFFECTIVE_FROM_DESCRIPTION =
  'When the change takes effect; default now. Up to 60 s in the past means now; at most 366 days ahead. A later instant ' +
  'records the change now (ScheduledLimitChange) and applies it at that instant in every replica.';

const MODE_DESCRIPTION =
  'ENFORCE (the default) sets the limit in force, keeping any shadow limit of this level; SHADOW sets a shadow limit beside it, decided but never refusing ' +
  '(rate dimensions only: INGEST, EGRESS, AI_INFERENCE, PROVISIONING on readings and per-message charges alike, API_REQUESTS as EXACT_REJECT would decide), which promoteShadowLimit enforces.';

const PromoteShadowLimitInput = builder.inputType('PromoteShadowLimitInput', {
  description:
    "Makes a level's shadow limit its enforced limit: a tier's (tierId), a tenant override's (tenantId; a reason is then required) or the platform default's (platform: true). Give exactly one.",
  fields: (t) => ({
    tierId: t.id(),
    tenantId: t.id(),
    platform: t.boolean({ description: "true: the platform default's shadow limit." }),
    dimension: t.field({ type: DimensionEnum, required: true }),
    reason: t.string(),
  }),
});

const QuotaInput = builder.inputType('QuotaInput', {
  description:
    'A quota over a calendar period beside the rate. A limit of 0 sets no quota at this level (it falls through the cascade); ' +
    'given without a rate, the level sets only the quota.',
  fields: (t) => ({
    period: t.field({ type: QuotaPeriodEnum, required: true }),
    limit: t.float({ required: true, description: 'Units per period: a whole number from 0 to 10^12.' }),
    resetDay: t.int({ description: 'MONTH: the day (1 to 28) a period starts on; 1 when left out.' }),
    timeZone: t.string({ description: "IANA time zone of the period's midnight; UTC when left out." }),
  }),
});

export const SetPlatformDefaultInput = builder.inputType('SetPlatformDefaultInput', {
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, required: true }),
    mode: t.field({ type: LimitModeEnum, description: MODE_DESCRIPTION }),
    ratePerSecond: t.int(),
    burst: t.int({ description: BURST_DESCRIPTION }),
    ceiling: t.int(),
    quota: t.field({ type: QuotaInput }),
    reason: t.string(),
    effectiveFrom: t.field({ type: 'DateTime', description: EFFECTIVE_FROM_DESCRIPTION }),
  }),
});

const DefineTierInput = builder.inputType('DefineTierInput', {
  fields: (t) => ({ tierId: t.id({ required: true }), name: t.string({ required: true }) }),
});

export const SetTierLimitInput = builder.inputType('SetTierLimitInput', {
  fields: (t) => ({
    tierId: t.id({ required: true }),
    dimension: t.field({ type: DimensionEnum, required: true }),
    mode: t.field({ type: LimitModeEnum, description: MODE_DESCRIPTION }),
    ratePerSecond: t.int(),
    burst: t.int({ description: BURST_DESCRIPTION }),
    ceiling: t.int(),
    quota: t.field({ type: QuotaInput }),
    reason: t.string(),
    effectiveFrom: t.field({ type: 'DateTime', description: EFFECTIVE_FROM_DESCRIPTION }),
  }),
});

const ClearTierLimitInput = builder.inputType('ClearTierLimitInput', {
  fields: (t) => ({
    tierId: t.id({ required: true }),
    dimension: t.field({ type: DimensionEnum, required: true }),
    reason: t.string(),
    effectiveFrom: t.field({ type: 'DateTime', description: EFFECTIVE_FROM_DESCRIPTION }),
  }),
});

const RegisterTenantInput = builder.inputType('RegisterTenantInput', {
  fields: (t) => ({ tenantId: t.id({ required: true }), tierId: t.id() }),
});

const AssignTenantTierInput = builder.inputType('AssignTenantTierInput', {
  fields: (t) => ({ tenantId: t.id({ required: true }), tierId: t.id({ required: true }), reason: t.string() }),
});

export const SetTenantOverrideInput = builder.inputType('SetTenantOverrideInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    dimension: t.field({ type: DimensionEnum, required: true }),
    mode: t.field({ type: LimitModeEnum, description: MODE_DESCRIPTION }),
    ratePerSecond: t.int(),
    burst: t.int({ description: BURST_DESCRIPTION }),
    ceiling: t.int(),
    quota: t.field({ type: QuotaInput }),
    reason: t.string({ required: true }),
    expiresAt: t.field({ type: 'DateTime' }),
    effectiveFrom: t.field({ type: 'DateTime', description: EFFECTIVE_FROM_DESCRIPTION }),
  }),
});

const ClearTenantOverrideInput = builder.inputType('ClearTenantOverrideInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    dimension: t.field({ type: DimensionEnum, required: true }),
    reason: t.string({ required: true }),
    effectiveFrom: t.field({ type: 'DateTime', description: EFFECTIVE_FROM_DESCRIPTION }),
  }),
});

type ControlPlaneCommandName = keyof typeof CONTROL_PLANE_ERRORS;
const LIMIT_CHANGE_MUTATIONS = new Set<string>(LIMIT_CHANGE_COMMANDS);

/** One mutation per control-plane command: same name, `input` passed through, result mapped to the payload union. */
export function controlPlaneMutation<Name extends ControlPlaneCommandName>(name: Name, input: Parameters<typeof builder.inputType>[0] | object) {
  builder.mutationField(name, (t) =>
    t.field({
      type: AppliedType,
      args: { input: t.arg({ type: input as never, required: true }) },
      errors: {
        types: LIMIT_CHANGE_MUTATIONS.has(name) ? [...CONTROL_PLANE_ERRORS[name], ...LIMIT_CHANGE_OUTCOMES] : CONTROL_PLANE_ERRORS[name],
        directResult: true,
        union: { name: `${name[0]!.toUpperCase()}${name.slice(1)}Payload` },
      },
      resolve: async (_root, args, context) => {
        const run = context.controlPlane[name] as (actor: ApiContext['actor'], input: unknown) => Promise<LimitChangeResult>;
        return limitChangeOutcome(await run(context.actor, args.input));
      },
    }),
  );
}

builder.mutationType({ description: REFUSAL_RULE });
controlPlaneMutation('setPlatformDefault', SetPlatformDefaultInput);
controlPlaneMutation('defineTier', DefineTierInput);
controlPlaneMutation('setTierLimit', SetTierLimitInput);
controlPlaneMutation('clearTierLimit', ClearTierLimitInput);
controlPlaneMutation('registerTenant', RegisterTenantInput);
controlPlaneMutation('assignTenantTier', AssignTenantTierInput);
controlPlaneMutation('setTenantOverride', SetTenantOverrideInput);
controlPlaneMutation('clearTenantOverride', ClearTenantOverrideInput);
controlPlaneMutation('promoteShadowLimit', PromoteShadowLimitInput);
