import { shedTrend, type TrendPoint, topShedders, type TenantShed, unresolvedAdmissions, type UnresolvedAdmissionCount, InvalidTrendQuery, SHEDDER_ORDERS } from '../../metrics/index.ts';
import { builder } from '../builder.ts';
import { staleDb } from '../context.ts';
import { badInput } from '../queryErrors.ts';
import { pageSize } from '../paging.ts';
import { AllowanceEnum, DimensionEnum, TrendBucketEnum } from './enums.ts';
import { TenantType } from './tenant.ts';

// The one measure of refusals (docs/governance-model.md, "Observing it"): messages, because every refusal is one
// refused message (request) whatever it was charged on, while a refusal on the per-message charge, before the
// body is decoded, carries no units.
const LIMITED =
  'Refusals: shed + rejected messages (requests), one per request answered 429 (or 413 as larger than the burst) or batch dropped, whether it was refused on the per-message charge (before decoding, no units) or on its units. The one measure of "limited": never 0 when anything was refused.';
const LIMITED_UNITS = 'shed + rejected units: the units of refused requests where they were known (a refusal on the per-message charge carries none).';
const UNAUTHENTICATED =
  'Units charged and then refused because the sender’s key failed (ingest answers 401; readings are charged before the credential is checked): never in admitted, not a limit hit.';
const LIMITED_MESSAGES = 'The same as limited.';

const TrendPointType = builder.objectRef<TrendPoint>('TrendPoint').implement({
  description:
    'Units and messages admitted, shed and rejected in one bucket, and the seconds in which a limit was hit. admitted, shed, rejected: units; *Messages: messages (requests). rejected: refused with HTTP 429; shed: dropped (integrations) or sampled out; limited: refused messages of both kinds, limitedUnits their units.',
  fields: (t) => ({
    start: t.field({ type: 'DateTime', resolve: (point) => point.start }),
    admitted: t.exposeFloat('admitted'),
    shed: t.exposeFloat('shed'),
    rejected: t.exposeFloat('rejected'),
    limited: t.exposeFloat('limited', { description: LIMITED }),
    limitedUnits: t.exposeFloat('limitedUnits', { description: LIMITED_UNITS }),
    admittedMessages: t.exposeFloat('admittedMessages'),
    shedMessages: t.exposeFloat('shedMessages'),
    rejectedMessages: t.exposeFloat('rejectedMessages'),
    limitedMessages: t.exposeFloat('limitedMessages', { description: LIMITED_MESSAGES, deprecationReason: 'Use limited: the same number.' }),
    unauthenticated: t.exposeFloat('unauthenticated', { description: UNAUTHENTICATED }),
    unauthenticatedMessages: t.exposeFloat('unauthenticatedMessages', { description: 'Requests answered 401 after their units were charged (see unauthenticated).' }),
    hits: t.exposeInt('hits'),
    shadowLimited: t.exposeFloat('shadowLimited', {
      description: 'Units a shadow limit (mode SHADOW) would have refused; it refused none of them (they are in admitted, shed or rejected as the enforced limit decided).',
    }),
    shadowLimitedMessages: t.exposeFloat('shadowLimitedMessages', { description: 'Messages (requests) a shadow limit would have refused.' }),
    quotaRejected: t.exposeFloat('quotaRejected', {
      description: 'Units refused for a period quota (HTTP 429 with X-RateLimit-Scope: quota): a part of rejected, as governance_quota_rejected_units_total is a part of governance_rejected_units_total.',
    }),
    quotaRejectedMessages: t.exposeFloat('quotaRejectedMessages', { description: 'Messages (requests) refused for a period quota: a part of rejectedMessages.' }),
  }),
});

const TenantShedType = builder.objectRef<TenantShed>('TenantShed').implement({
  description: 'One tenant’s refusals over a range. shed, rejected: units; *Messages: messages (requests); limited: refused messages of both kinds, limitedUnits their units.',
  fields: (t) => ({
    tenantId: t.exposeID('tenantId'),
    tenant: t.field({ type: TenantType, nullable: true, resolve: (shed) => shed.tenantId }),
    shed: t.exposeFloat('shed'),
    rejected: t.exposeFloat('rejected'),
    limited: t.exposeFloat('limited', { description: LIMITED }),
    limitedUnits: t.exposeFloat('limitedUnits', { description: LIMITED_UNITS }),
    shedMessages: t.exposeFloat('shedMessages'),
    rejectedMessages: t.exposeFloat('rejectedMessages'),
    limitedMessages: t.exposeFloat('limitedMessages', { description: LIMITED_MESSAGES, deprecationReason: 'Use limited: the same number.' }),
    hits: t.exposeInt('hits'),
  }),
});

const ShedderOrderEnum = builder.enumType('ShedderOrder', {
  description: 'What topShedders ranks by.',
  values: {
    MESSAGES: { value: SHEDDER_ORDERS[0], description: 'Refused messages (requests): limited. The default.' },
    UNITS: { value: SHEDDER_ORDERS[1], description: 'Refused units: limitedUnits (refusals on the per-message charge carry none).' },
  },
});

const UnresolvedAdmissionCountType = builder.objectRef<UnresolvedAdmissionCount>('UnresolvedAdmissionCount').implement({
  description: 'Units admitted at the platform default because the tenant’s ceilings were not known.',
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (count) => count.dimension }),
    cause: t.exposeString('cause', { description: 'unreachable, unknown-tenant or pending' }),
    count: t.exposeFloat('count'),
    messages: t.exposeFloat('messages'),
  }),
});

/** The trend readers check their input and throw InvalidTrendQuery; the client gets it as BAD_USER_INPUT. */
async function asUserInput<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof InvalidTrendQuery) throw badInput(error.field, error.message);
    throw error;
  }
}

builder.queryFields((t) => ({
  shedTrend: t.field({
    type: [TrendPointType],
    args: {
      tenantId: t.arg.id({ required: true }),
      dimension: t.arg({ type: DimensionEnum, required: true }),
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
      bucket: t.arg({ type: TrendBucketEnum, required: true }),
      allowance: t.arg({ type: AllowanceEnum, description: 'Only this allowance; absent: summed over the allowances.' }),
      fill: t.arg.boolean({ description: 'true: every bucket of the range, zeros included; absent or false: only buckets with traffic.' }),
    },
    authScopes: (_root, { tenantId }) => ({ auditTenant: tenantId }),
    resolve: (_root, args, context) => asUserInput(() => shedTrend(staleDb(context), args)),
  }),
  topShedders: t.field({
    type: [TenantShedType],
    description:
      'The tenants that were refused the most over a range: ranked by refused messages (limited; a tenant with 2,000 refused requests comes before one with 67, whatever their units), or by refused units with orderBy: UNITS; the other measure breaks ties, then the tenant id.',
    args: {
      dimension: t.arg({ type: DimensionEnum }),
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
      first: t.arg.int(),
      orderBy: t.arg({ type: ShedderOrderEnum, description: 'MESSAGES (the default) or UNITS.' }),
    },
    authScopes: { readEverything: true },
    resolve: (_root, { dimension, from, to, first, orderBy }, context) =>
      asUserInput(() => topShedders(staleDb(context), { dimension: dimension ?? undefined, from, to, first: pageSize(first ?? 10), orderBy })),
  }),
  unresolvedAdmissions: t.field({
    type: [UnresolvedAdmissionCountType],
    args: { from: t.arg({ type: 'DateTime', required: true }), to: t.arg({ type: 'DateTime', required: true }) },
    authScopes: { readEverything: true },
    resolve: (_root, range, context) => asUserInput(() => unresolvedAdmissions(staleDb(context), range)),
  }),
}));
