import type { Db } from '../db/db.ts';
import type { EventStore } from './eventStore.ts';
import { createPostgresEventStore } from './postgres/postgresEventStore.ts';

/**
 * EVENTSTORE_URL selects EventStoreDB for the ledger; otherwise the ledger lives in the database. The
 * EventStoreDB client is loaded only when it is used: it would otherwise cost every start and every CLI call.
 */
export async function openEventStore(db: Db, eventStoreUrl: string | undefined): Promise<EventStore> {
  if (!eventStoreUrl) return createPostgresEventStore(db);
  const { createEventStoreDbEventStore } = await import('./eventstoredb/index.ts');
  return createEventStoreDbEventStore(eventStoreUrl);
}
