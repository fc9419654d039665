// The ledger's surface: the EventStore port and how to open it, the event catalog, the Recorder that writes
// governance decisions, the projection machinery (runner, set, rebuild, readiness) and retention.
export * from './eventStore.ts';
export * from './openEventStore.ts';
export * from './openSubscriptions.ts';
export * from './appendSize.ts';
export * from './catalog/index.ts';
export * from './catalog/admissions.ts';
export * from './catalog/summaryRefs.ts';
export * from './catalog/commands.ts';
export * from './catalog/controlPlane.ts';
export * from './catalog/inference.ts';
export * from './catalog/limitChangeRequests.ts';
export * from './ledgerRecorder.ts';
export * from './projection.ts';
export * from './projectionSet.ts';
export * from './projectionReadiness.ts';
export * from './rebuild.ts';
export * from './rebuildProgress.ts';
export * from './checkpoints.ts';
export { listQuarantine, countQuarantine, projectionQuarantineCounts, MAX_QUARANTINE_REASON_CHARS, type QuarantinedEvent } from './quarantine.ts';
export type { QuarantineNotice } from './projectionRunner.ts';
export { createPostgresEventStore } from './postgres/postgresEventStore.ts';
export { lookUpSummaryEvent } from './postgres/lookUpSummaryEvent.ts';
// The EventStoreDB adapter is reached through openEventStore, which loads its client only when EVENTSTORE_URL is set.
export * from './retention/startLedgerRetention.ts';
export { appendInTransaction, appendStreamsInTransaction, type StreamAppend } from './postgres/appendInTransaction.ts';
export { serveProjectionWorker } from './projectionWorkerThread.ts';
export type { PostgresConnection, ProjectionIsolation } from './projectionWorker.ts';
export * from './verifiable/index.ts';
