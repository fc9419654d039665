// Quota notices and webhooks: the quotaThresholdCrossed subscription (a tenant's auditors and operators), and
// for operators registerWebhook and the webhooks with their delivery logs; usage per period for billing.
import { builder } from '../builder.ts';
import { Forbidden, InvalidInput } from './errorClasses.ts';
import { GraphQLError } from '../graphql.ts';
import { createReadModelLimitSource } from '../../control-plane/index.ts';
import { InvalidUsageQuery, MAX_USAGE_DAYS, quotaNoticesOf, quotaStatus, usage, type QuotaStatus, type QuotaThresholdCrossedData, type UsageRow } from '../../quotas/index.ts';
import { listWebhooks, registerWebhook, webhookDeliveries, WEBHOOK_EVENTS, type WebhookDeliveryRecord, type WebhookRecord } from '../../webhooks/index.ts';
import { DimensionEnum, LimitSourceEnum, QuotaPeriodEnum } from './enums.ts';
import { QuotaValueType } from './limitValue.ts';

/** A refused input, as a GraphQL error with the field at fault (nothing was stored). */
function invalidInput(field: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', field } });
}

const QuotaNoticeType = builder.objectRef<QuotaThresholdCrossedData>('QuotaNotice').implement({
  description: "A threshold of a tenant's period quota reached for the first time in a period (QuotaThresholdCrossed in the ledger).",
  fields: (t) => ({
    tenantId: t.exposeID('tenantId'),
    dimension: t.field({ type: DimensionEnum, resolve: (notice) => notice.dimension as never }),
    thresholdPercent: t.exposeInt('thresholdPercent'),
    period: t.field({ type: QuotaPeriodEnum, resolve: (notice) => notice.period }),
    periodStart: t.field({ type: 'DateTime', resolve: (notice) => new Date(notice.periodStart) }),
    periodEnd: t.field({ type: 'DateTime', resolve: (notice) => new Date(notice.periodEnd) }),
    limit: t.exposeFloat('limit'),
    used: t.exposeFloat('used'),
  }),
});

const WebhookEventEnum = builder.enumType('WebhookEvent', { values: WEBHOOK_EVENTS });
const DeliveryStatusEnum = builder.enumType('WebhookDeliveryStatus', {
  description: 'PENDING: due again at its next attempt; DELIVERED: answered 2xx; FAILED: no 2xx within 24 hours.',
  values: ['PENDING', 'DELIVERED', 'FAILED'] as const,
});

const WebhookDeliveryType = builder.objectRef<WebhookDeliveryRecord>('WebhookDelivery').implement({
  fields: (t) => ({
    eventId: t.exposeID('eventId', { description: 'The ledger event, sent as X-Governance-Delivery: the idempotency id.' }),
    eventType: t.field({ type: WebhookEventEnum, resolve: (delivery) => delivery.eventType as never }),
    tenantId: t.exposeID('tenantId', { nullable: true }),
    status: t.field({ type: DeliveryStatusEnum, resolve: (delivery) => delivery.status }),
    attempts: t.exposeInt('attempts'),
    lastAttemptAt: t.field({ type: 'DateTime', nullable: true, resolve: (delivery) => delivery.lastAttemptAt }),
    lastStatusCode: t.exposeInt('lastStatusCode', { nullable: true }),
    lastError: t.exposeString('lastError', { nullable: true }),
    deliveredAt: t.field({ type: 'DateTime', nullable: true, resolve: (delivery) => delivery.deliveredAt }),
    createdAt: t.field({ type: 'DateTime', resolve: (delivery) => delivery.createdAt }),
  }),
});

const WebhookType = builder.objectRef<WebhookRecord>('Webhook').implement({
  description: 'A receiver of notices, signed with HMAC-SHA256 (X-Governance-Signature: t=<seconds>,v1=<hex of HMAC(secret, "t.body")>).',
  fields: (t) => ({
    webhookId: t.exposeID('webhookId'),
    tenantId: t.exposeID('tenantId', { nullable: true, description: 'Null: platform-wide.' }),
    url: t.exposeString('url'),
    events: t.field({ type: [WebhookEventEnum], resolve: (webhook) => webhook.events as never }),
    createdAt: t.field({ type: 'DateTime', resolve: (webhook) => webhook.createdAt }),
    deliveries: t.field({
      type: [WebhookDeliveryType],
      description: 'The delivery log, newest first.',
      args: { limit: t.arg.int({ defaultValue: 100, description: '1 to 500.' }) },
      resolve: (webhook, { limit }, context) => webhookDeliveries(context.db, webhook.webhookId, limit ?? 100),
    }),
  }),
});

const RegisterWebhookInput = builder.inputType('RegisterWebhookInput', {
  fields: (t) => ({
    url: t.string({ required: true, description: 'http or https, at most 2,048 characters, no credentials.' }),
    secret: t.string({ required: true, description: '16 to 256 printable ASCII characters: the HMAC key.' }),
    events: t.field({ type: [WebhookEventEnum], required: true }),
    tenantId: t.id({ description: "Left out: platform-wide, every tenant's notices." }),
  }),
});

const RegisteredWebhookType = builder.objectRef<{ webhookId: string }>('RegisteredWebhook').implement({
  fields: (t) => ({ webhookId: t.exposeID('webhookId') }),
});

builder.queryField('webhooks', (t) =>
  t.field({
    type: [WebhookType],
    description: "Webhooks: a tenant's own and the platform-wide ones when tenantId is given, else all (operators only).",
    args: { tenantId: t.arg.id() },
    authScopes: { operate: true },
    resolve: (_root, { tenantId }, context) => listWebhooks(context.db, tenantId ?? undefined),
  }),
);

builder.mutationField('registerWebhook', (t) =>
  t.field({
    type: RegisteredWebhookType,
    description: 'Registers a webhook for notices (operators only; others are answered Forbidden). A bad field answers InvalidInput and registers nothing.',
    args: { input: t.arg({ type: RegisterWebhookInput, required: true }) },
    authScopes: { operate: true },
    errors: { types: [Forbidden, InvalidInput], directResult: true, union: { name: 'RegisterWebhookPayload' } },
    resolve: async (_root, { input }, context) => {
      if (!context.webhookDb) throw new GraphQLError('webhooks are not available on this server', { extensions: { code: 'UNAVAILABLE' } });
      const result = await registerWebhook(context.webhookDb, context.actor.id, input);
      if (result.status === 'refused') throw new InvalidInput(result.message, result.field);
      return { webhookId: result.webhookId };
    },
  }),
);

builder.subscriptionField('quotaThresholdCrossed', (t) =>
  t.field({
    type: QuotaNoticeType,
    args: { tenantId: t.arg.id({ required: true }) },
    authScopes: (_root, { tenantId }) => ({ auditTenant: tenantId }),
    subscribe: (_root, { tenantId }, context) => context.pubsub.subscribe('quotaThresholdCrossed', tenantId),
    resolve: (notice: QuotaThresholdCrossedData) => notice,
  }),
);

const UsageRowType = builder.objectRef<UsageRow>('UsageRow').implement({
  description:
    "A tenant's units on one dimension in one period, summed from the ledger's admission summaries: what it can be billed from. " +
    "Periods are the tenant's quota periods where it has a quota of that length, else UTC days or months.",
  fields: (t) => ({
    tenantId: t.exposeID('tenantId'),
    dimension: t.field({ type: DimensionEnum, resolve: (row) => row.dimension }),
    periodStart: t.field({ type: 'DateTime', resolve: (row) => new Date(row.periodStart) }),
    periodEnd: t.field({ type: 'DateTime', resolve: (row) => new Date(row.periodEnd) }),
    admittedUnits: t.exposeFloat('admittedUnits'),
    shedUnits: t.exposeFloat('shedUnits'),
    rejectedUnits: t.exposeFloat('rejectedUnits'),
    quotaRejectedUnits: t.exposeFloat('quotaRejectedUnits', { description: 'Of rejectedUnits, refused for the period quota.' }),
    quotaLimit: t.exposeFloat('quotaLimit', { nullable: true, description: 'The quota of this period length in force now; null without one.' }),
    quotaUsed: t.exposeFloat('quotaUsed'),
    quotaLeft: t.exposeFloat('quotaLeft', { nullable: true }),
  }),
});

builder.queryField('usage', (t) =>
  t.field({
    type: [UsageRowType],
    description: `Usage per dimension and period over [from, to) (at most ${MAX_USAGE_DAYS} days), from the ledger's admission summaries.`,
    args: {
      tenantId: t.arg.id({ required: true }),
      from: t.arg({ type: 'DateTime', required: true }),
      to: t.arg({ type: 'DateTime', required: true }),
      granularity: t.arg({ type: QuotaPeriodEnum, required: true }),
    },
    authScopes: (_root, { tenantId }) => ({ auditTenant: tenantId }),
    resolve: async (_root, { tenantId, from, to, granularity }, context) => {
      try {
        return await usage(context.store, createReadModelLimitSource(context.db), { tenantId, from, to, granularity });
      } catch (error) {
        if (error instanceof InvalidUsageQuery) throw invalidInput(error.field, error.message);
        throw error;
      }
    },
  }),
);

const QuotaStatusType = builder.objectRef<QuotaStatus>('QuotaStatus').implement({
  description: "A tenant's period quota on one dimension now: the quota, where it comes from, the current period and what is used of it.",
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (status) => status.dimension }),
    quota: t.field({ type: QuotaValueType, resolve: (status) => status.quota }),
    source: t.field({ type: LimitSourceEnum, resolve: (status) => status.source }),
    periodStart: t.field({ type: 'DateTime', resolve: (status) => new Date(status.periodStart) }),
    periodEnd: t.field({ type: 'DateTime', resolve: (status) => new Date(status.periodEnd) }),
    used: t.exposeFloat('used', { description: "Units admitted so far this period, from the ledger's summaries (up to a flush interval behind)." }),
  }),
});

builder.queryFields((t) => ({
  quotas: t.field({
    type: [QuotaStatusType],
    description: "The tenant's period quotas now, one per dimension that has one.",
    args: { tenantId: t.arg.id({ required: true }) },
    authScopes: (_root, { tenantId }) => ({ auditTenant: tenantId }),
    resolve: (_root, { tenantId }, context) => quotaStatus(context.store, createReadModelLimitSource(context.db), tenantId),
  }),
  quotaNotices: t.field({
    type: [QuotaNoticeType],
    description: 'The quota thresholds recorded for the tenant, newest first.',
    args: { tenantId: t.arg.id({ required: true }), first: t.arg.int({ defaultValue: 50, description: '1 to 200.' }) },
    authScopes: (_root, { tenantId }) => ({ auditTenant: tenantId }),
    resolve: (_root, { tenantId, first }, context) => quotaNoticesOf(context.store, tenantId, first ?? 50),
  }),
}));
