// The limit preview's surface: what a limit change would have refused over a past range, replayed from the
// ledger's per-second admission summaries through the governance library's own limiters.
export { InvalidPreview, previewLimitChange, DEFAULT_LISTED_TENANTS, DEFAULT_PREVIEW_DAYS, MAX_LISTED_TENANTS, MAX_PREVIEW_DAYS, MAX_PREVIEW_TENANTS } from './previewLimitChange.ts';
export type { LimitChangePreview, PreviewQuery, ProposedLimitChange, RefusalFigures, TenantLimitPreview, WorstMinute } from './previewLimitChange.ts';
export { MAX_SPAN_SECONDS, RECORDED_LATE_SECONDS } from './readDemand.ts';
export { MAX_STEPS_PER_SECOND } from './replayDemand.ts';
export { formatPreview } from './formatPreview.ts';
export { MAX_SERIES_POINTS, type PreviewPoint } from './previewSeries.ts';
