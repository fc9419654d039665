import { shedTrend, type TrendPoint, topShedders, type TenantShed, unresolvedAdmissions, type UnresolvedAdmissionCount, InvalidTrendQuery } from '../../metrics/index.ts';
import { builder } from '../builder.ts';
import { badInput } from '../queryErrors.ts';
import { pageSize } from '../paging.ts';
import { AllowanceEnum, DimensionEnum, TrendBucketEnum } from './enums.ts';
import { TenantType } from './tenant.ts';

const LIMITED = 'shed + rejected: units a client lost, whether answered 429 (rejected) or dropped (shed).';
const UNAUTHENTICATED =
  'Units charged and then refused because the sender’s key failed (ingest answers 401; readings are charged before the credential is checked): never in admitted, not a limit hit.';
const LIMITED_MESSAGES = 'shed + rejected messages (requests): one per 429 answered or batch dropped; matches the 429s a client counted.';

const TrendPointType = builder.objectRef<TrendPoint>('TrendPoint').implement({
  description:
    'Units and messages admitted, shed and rejected in one bucket, and the seconds in which a limit was hit. rejected: refused with HTTP 429; shed: dropped (integrations) or sampled out; limited: both.',
  fields: (t) => ({
    start: t.field({ type: 'DateTime', resolve: (point) => point.start }),
    admitted: t.exposeFloat('admitted'),
    shed: t.exposeFloat('shed'),
    rejected: t.exposeFloat('rejected'),
    limited: t.exposeFloat('limited', { description: LIMITED }),
    admittedMessages: t.exposeFloat('admittedMessages'),
    shedMessages: t.exposeFloat('shedMessages'),
    rejectedMessages: t.exposeFloat('rejectedMessages'),
    limitedMessages: t.exposeFloat('limitedMessages', { description: LIMITED_MESSAGES }),
    unauthenticated: t.exposeFloat('unauthenticated', { description: UNAUTHENTICATED }),
    unauthenticatedMessages: t.exposeFloat('unauthenticatedMessages', { description: 'Requests answered 401 after their units were charged (see unauthenticated).' }),
    hits: t.exposeInt('hits'),
  }),
});

const TenantShedType = builder.objectRef<TenantShed>('TenantShed').implement({
  fields: (t) => ({
    tenantId: t.exposeID('tenantId'),
    tenant: t.field({ type: TenantType, nullable: true, resolve: (shed) => shed.tenantId }),
    shed: t.exposeFloat('shed'),
    rejected: t.exposeFloat('rejected'),
    limited: t.exposeFloat('limited', { description: LIMITED }),
    shedMessages: t.exposeFloat('shedMessages'),
    rejectedMessages: t.exposeFloat('rejectedMessages'),
    limitedMessages: t.exposeFloat('limitedMessages', { description: LIMITED_MESSAGES }),
    hits: t.exposeInt('hits'),
  }),
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
    resolve: (_root, args, context) => asUserInput(() => shedTrend(context.db, args)),
  }),
  topShedders: t.field({
    type: [TenantShedType],
    description: 'The tenants that were limited (shed + rejected) the most over a range, ranked by limited units, then limited messages.',
    args: {
      dimension: t.arg({ type: DimensionEnum }),
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
      first: t.arg.int(),
    },
    authScopes: { readEverything: true },
    resolve: (_root, { dimension, from, to, first }, context) =>
      asUserInput(() => topShedders(context.db, { dimension: dimension ?? undefined, from, to, first: pageSize(first ?? 10) })),
  }),
  unresolvedAdmissions: t.field({
    type: [UnresolvedAdmissionCountType],
    args: { from: t.arg({ type: 'DateTime', required: true }), to: t.arg({ type: 'DateTime', required: true }) },
    authScopes: { readEverything: true },
    resolve: (_root, range, context) => asUserInput(() => unresolvedAdmissions(context.db, range)),
  }),
}));
