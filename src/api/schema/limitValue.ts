import type { LimitValue } from '../../governance/index.ts';
import { builder } from '../builder.ts';

export const LimitValueType = builder.objectRef<LimitValue>('LimitValue').implement({
  description: 'Rate dimensions use ratePerSecond and burst; UNDELIVERED_COMMANDS uses ceiling.',
  fields: (t) => ({
    ratePerSecond: t.exposeInt('ratePerSecond', { nullable: true }),
    burst: t.exposeInt('burst', {
      nullable: true,
      description: 'The token bucket size in force: the burst set at the winning level, or, where that level set only a rate, the rate times the shipped burst/rate ratio (twice the rate on INGEST, EGRESS and AI_INFERENCE).',
    }),
    ceiling: t.exposeInt('ceiling', { nullable: true }),
  }),
});
