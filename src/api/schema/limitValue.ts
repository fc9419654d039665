import type { LimitValue, QuotaValue } from '../../governance/index.ts';
import { builder } from '../builder.ts';
import { QuotaPeriodEnum } from './enums.ts';

export const QuotaValueType = builder.objectRef<QuotaValue>('QuotaValue').implement({
  description: 'A quota over a calendar period: `limit` units per DAY or MONTH, the period starting at midnight in `timeZone` (a MONTH on `resetDay`).',
  fields: (t) => ({
    period: t.field({ type: QuotaPeriodEnum, resolve: (quota) => quota.period }),
    limit: t.float({ description: 'Units per period (a whole number up to 10^12).', resolve: (quota) => quota.limit }),
    resetDay: t.exposeInt('resetDay'),
    timeZone: t.exposeString('timeZone'),
  }),
});

export const LimitValueType = builder.objectRef<LimitValue>('LimitValue').implement({
  description: 'Rate dimensions use ratePerSecond and burst; UNDELIVERED_COMMANDS uses ceiling.',
  fields: (t) => ({
    ratePerSecond: t.exposeInt('ratePerSecond', { nullable: true }),
    burst: t.exposeInt('burst', {
      nullable: true,
      description: 'The token bucket size in force: the burst set at the winning level, or, where that level set only a rate, the rate times the shipped burst/rate ratio (twice the rate on INGEST, EGRESS and AI_INFERENCE).',
    }),
    ceiling: t.exposeInt('ceiling', { nullable: true }),
    quota: t.field({
      type: QuotaValueType,
      nullable: true,
      description: 'The period quota this level sets beside the rate; null: none here (the level below may set one).',
      resolve: (value) => value.quota ?? null,
    }),
  }),
});
