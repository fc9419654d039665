import type { Db } from '../db/db.ts';
import type { EventStore } from './eventStore.ts';
import { createPostgresEventStore } from './postgres/postgresEventStore.ts';
import { createEventStoreDbEventStore } from './eventstoredb/index.ts';

/** EVENTSTORE_URL selects EventStoreDB for the ledger; otherwise the ledger lives in the database. */
export function openEventStore(db: Db, eventStoreUrl: string | undefined): EventStore {
  return eventStoreUrl ? createEventStoreDbEventStore(eventStoreUrl) : createPostgresEventStore(db);
}
