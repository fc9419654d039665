// The limit preview's surface: what a limit change would have refused over a past range, replayed from the
// recorded per-second demand (the admission-demand read model, and the ledger after its checkpoint) through the
// governance library's own limiters.
export { InvalidPreview, previewLimitChange, DEFAULT_LISTED_TENANTS, DEFAULT_PREVIEW_DAYS, MAX_LISTED_TENANTS, MAX_PREVIEW_DAYS, MAX_PREVIEW_TENANTS } from './previewLimitChange.ts';
export type { LimitChangePreview, PreviewQuery, ProposedLimitChange, RefusalFigures, TenantLimitPreview, WorstMinute } from './previewLimitChange.ts';
export { DEMAND_PROJECTION } from './readDemand.ts';
export { MAX_STEPS_PER_SECOND } from './replayDemand.ts';
export { addSummaryDemand, EVERY_REPLAYED_SUMMARY, MAX_SPAN_SECONDS } from './summaryDemand.ts';
export { DemandMinutes } from './demandSeconds.ts';
export { OPEN_SHARDS, openFrom, writeDemand } from './openDemand.ts';
export { demandRetentionDays, pruneDemand, startDemandPruning } from './pruneDemand.ts';
export { formatPreview } from './formatPreview.ts';
export { MAX_SERIES_POINTS, type PreviewPoint } from './previewSeries.ts';
