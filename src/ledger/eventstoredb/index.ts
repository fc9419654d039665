// The EventStoreDB / KurrentDB adapter of the EventStore port (see README.md).
export { createEventStoreDbEventStore, type EventStoreDbOptions } from './eventStoreDb.ts';
export { DEFAULT_APPEND_RETRY, type AppendRetry } from './append.ts';
export type { EsdbClient } from './client.ts';
