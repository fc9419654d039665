import type { LimitValue } from '../../governance/index.ts';
import { builder } from '../builder.ts';

export const LimitValueType = builder.objectRef<LimitValue>('LimitValue').implement({
  description: 'Rate dimensions use ratePerSecond and burst; UNDELIVERED_COMMANDS uses ceiling.',
  fields: (t) => ({
    ratePerSecond: t.exposeInt('ratePerSecond', { nullable: true }),
    burst: t.exposeInt('burst', { nullable: true }),
    ceiling: t.exposeInt('ceiling', { nullable: true }),
  }),
});
