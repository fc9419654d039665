// limitChangePreview: what a limit change would have refused over a past range, replayed from the ledger
// (src/limit-preview). Read-only; operators and auditors may ask.
import { InvalidPreview, MAX_LISTED_TENANTS, MAX_PREVIEW_DAYS, MAX_PREVIEW_TENANTS, MAX_SERIES_POINTS, MAX_SPAN_SECONDS, MAX_STEPS_PER_SECOND, previewLimitChange } from '../../limit-preview/index.ts';
import type { LimitChangePreview, PreviewPoint, TenantLimitPreview, WorstMinute } from '../../limit-preview/index.ts';
import { builder } from '../builder.ts';
import { GraphQLError } from '../graphql.ts';
import { badInput } from '../queryErrors.ts';
import { DimensionEnum, LimitSourceEnum } from './enums.ts';
import { LimitValueType } from './limitValue.ts';
import { SetPlatformDefaultInput, SetTenantOverrideInput, SetTierLimitInput } from './limitMutations.ts';

const REPLAY_LIMITS =
  'A replay of what was recorded, not a forecast: refused traffic that was retried was recorded, and is replayed, once per attempt (counted again); ' +
  'traffic that was never sent because of a refusal (a client that backed off, a device that gave up) is unknown to the ledger and missing here. ' +
  `Each second is replayed as its messages, equal in size and evenly spaced (at most ${MAX_STEPS_PER_SECOND} steps a second), so a burst at the start of a second is refused a little less than a real limiter would; ` +
  `each tenant and allowance is replayed through one limiter, as if one replica metered it (shared counting across replicas is not modelled); ` +
  `a summary covering more than ${MAX_SPAN_SECONDS} s is not replayed, and one covering several seconds is spread evenly over them; ` +
  'each limiter starts full at the range\'s start; summaries the demand projection set aside (its quarantine) are not replayed, ' +
  `nor demand older than its retention (the minute trends' retention, and at least ${MAX_PREVIEW_DAYS} days).`;

const WorstMinuteType = builder.objectRef<WorstMinute>('PreviewWorstMinute').implement({
  description: 'The minute in which the most units would have been refused.',
  fields: (t) => ({
    start: t.field({ type: 'DateTime', resolve: (minute) => minute.start }),
    refusedUnits: t.exposeFloat('refusedUnits'),
  }),
});

type Figures = Omit<TenantLimitPreview, 'tenantId' | 'proposedLimit' | 'currentLimit' | 'currentSource'>;

const PreviewFiguresInterface = builder.interfaceRef<Figures>('LimitChangePreviewFigures').implement({
  description: 'What the proposed limit and the limit in force now would have refused of recorded demand, and what was refused then.',
  fields: (t) => ({
    demandUnits: t.exposeFloat('demandUnits', { description: 'Units offered over the range (admitted + shed + rejected), as recorded.' }),
    demandMessages: t.exposeFloat('demandMessages', { description: 'Messages (requests) offered over the range, as recorded.' }),
    refusedUnits: t.exposeFloat('refusedUnits', { description: 'Units the proposed limit would have refused.' }),
    refusedMessages: t.exposeFloat('refusedMessages', { description: 'Messages (requests) the proposed limit would have refused.' }),
    limitedSeconds: t.exposeInt('limitedSeconds', { description: 'Seconds in which the proposed limit would have refused something (summed over allowances and, in the total, tenants).' }),
    worstMinute: t.field({ type: WorstMinuteType, nullable: true, resolve: (figures) => figures.worstMinute }),
    currentRefusedUnits: t.exposeFloat('currentRefusedUnits', { description: 'The same replay under the limit in force now.' }),
    currentRefusedMessages: t.exposeFloat('currentRefusedMessages'),
    currentLimitedSeconds: t.exposeInt('currentLimitedSeconds'),
    currentWorstMinute: t.field({ type: WorstMinuteType, nullable: true, resolve: (figures) => figures.currentWorstMinute }),
    recordedRefusedUnits: t.exposeFloat('recordedRefusedUnits', { description: 'What the limits in force then refused, as recorded (shed + rejected units).' }),
    recordedRefusedMessages: t.exposeFloat('recordedRefusedMessages'),
  }),
});

const PreviewTotalType = builder.objectRef<Figures>('LimitChangePreviewTotal').implement({
  description: 'The figures summed over every affected tenant (the worst minute: of the sum).',
  interfaces: [PreviewFiguresInterface],
  isTypeOf: (value) => !('tenantId' in (value as object)),
  fields: () => ({}),
});

const TenantPreviewType = builder.objectRef<TenantLimitPreview>('TenantLimitPreview').implement({
  description: 'One affected tenant: its limit now and as proposed, and what each would have refused of its recorded demand.',
  interfaces: [PreviewFiguresInterface],
  isTypeOf: (value) => 'tenantId' in (value as object),
  fields: (t) => ({
    tenantId: t.exposeID('tenantId'),
    proposedLimit: t.field({ type: LimitValueType, resolve: (tenant) => tenant.proposedLimit }),
    currentLimit: t.field({ type: LimitValueType, resolve: (tenant) => tenant.currentLimit }),
    currentSource: t.field({ type: LimitSourceEnum, resolve: (tenant) => tenant.currentSource }),
  }),
});

const PreviewPointType = builder.objectRef<PreviewPoint>('LimitChangePreviewPoint').implement({
  description: `One bucket of the range (whole minutes, at most ${MAX_SERIES_POINTS} buckets): recorded demand, and what each limit refused or would have refused in it.`,
  fields: (t) => ({
    start: t.field({ type: 'DateTime', resolve: (point) => point.start }),
    seconds: t.exposeInt('seconds', { description: `The bucket length: 60 s, or as many minutes as keeping the range within ${MAX_SERIES_POINTS} points takes.` }),
    demandUnits: t.exposeFloat('demandUnits', { description: 'Units every affected tenant offered in the bucket (admitted + shed + rejected), as recorded.' }),
    peakUnitsPerSecond: t.exposeFloat('peakUnitsPerSecond', {
      description: 'The most units one tenant offered in one second of the bucket (per allowance): what one limiter saw at its busiest, to compare with a limit per second.',
    }),
    refusedUnits: t.exposeFloat('refusedUnits', { description: 'Units the proposed limit would have refused in the bucket.' }),
    currentRefusedUnits: t.exposeFloat('currentRefusedUnits', { description: 'Units the limit in force now would have refused in the bucket.' }),
    recordedRefusedUnits: t.exposeFloat('recordedRefusedUnits', { description: 'Units the limits then in force did refuse in the bucket (shed + rejected), as recorded.' }),
  }),
});

const LimitChangePreviewType = builder.objectRef<LimitChangePreview>('LimitChangePreview').implement({
  description: `What a limit change would have refused over a past range: every affected tenant's recorded per-second demand replayed through the proposed limit and through the limit in force now. ${REPLAY_LIMITS}`,
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (preview) => preview.dimension }),
    from: t.field({ type: 'DateTime', resolve: (preview) => preview.from }),
    to: t.field({ type: 'DateTime', resolve: (preview) => preview.to }),
    tenantsAffected: t.exposeInt('tenantsAffected', { description: 'Tenants with recorded demand whose effective limit the change moves; all are in total.' }),
    total: t.field({ type: PreviewTotalType, resolve: (preview) => preview.total }),
    tenants: t.field({ type: [TenantPreviewType], description: 'The first affected tenants, most refused units first.', resolve: (preview) => preview.tenants }),
    proposedLimit: t.field({ type: LimitValueType, description: 'The value proposed at its level, as it would be stored.', resolve: (preview) => preview.proposedLimit }),
    series: t.field({
      type: [PreviewPointType],
      description: `The range as a series for a chart, over every affected tenant: buckets of whole minutes, at most ${MAX_SERIES_POINTS}.`,
      resolve: (preview) => preview.series,
    }),
  }),
});

builder.queryFields((t) => ({
  limitChangePreview: t.field({
    type: LimitChangePreviewType,
    description:
      `What a change would have refused: give exactly one of override, tierLimit and platformDefault (the mutation's own input; reason and mode are not read). ` +
      `from/to default to the last 7 days; at most ${MAX_PREVIEW_DAYS} days and ${MAX_PREVIEW_TENANTS.toLocaleString('en')} tenants with demand (more is refused with TOO_LARGE). ` +
      `Rate dimensions only. ${REPLAY_LIMITS}`,
    args: {
      override: t.arg({ type: SetTenantOverrideInput }),
      tierLimit: t.arg({ type: SetTierLimitInput }),
      platformDefault: t.arg({ type: SetPlatformDefaultInput }),
      from: t.arg({ type: 'DateTime' }),
      to: t.arg({ type: 'DateTime', description: 'Exclusive; default now.' }),
      first: t.arg.int({ description: `Tenants listed (default 100, at most ${MAX_LISTED_TENANTS}); total covers all.` }),
    },
    authScopes: { readEverything: true },
    resolve: async (_root, args, context) => {
      try {
        return await previewLimitChange(context.db, args);
      } catch (error) {
        if (!(error instanceof InvalidPreview)) throw error;
        if (error.code === 'INVALID_INPUT') throw badInput(error.field, error.message);
        throw new GraphQLError(error.message, { extensions: { code: error.code, field: error.field } });
      }
    },
  }),
}));
