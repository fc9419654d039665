// Metrics' surface: the registry and its /metrics route, the recorder the Governor reports to, the sources
// scraped at collection, the AI inference spend meter, and the trend read models' queries and pruning.
export * from './metrics.ts';
export * from './metricsRecorder.ts';
export * from './metricsRoute.ts';
export * from './metricsSettings.ts';
export * from './countCommandRejections.ts';
export * from './instrumentEventStore.ts';
export * from './commandBacklogSource.ts';
export * from './inferenceSpendMeter.ts';
export * from './trends/pruneTrends.ts';
export * from './trends/buckets.ts';
export * from './trends/rollupFamily.ts';
export * from './trends/splitAcrossMinutes.ts';
export * from './trends/summaryBounds.ts';
export * from './trends/upsertRollups.ts';
export * from './trends/wholeCount.ts';
export * from './trends/trendQuery.ts';
export * from './trends/shedTrend.ts';
export * from './trends/topShedders.ts';
export * from './trends/unresolvedAdmissions.ts';
export * from './trends/inferenceSpend.ts';
export * from './trends/openMinutes.ts';
export * from './trends/openRows.ts';
