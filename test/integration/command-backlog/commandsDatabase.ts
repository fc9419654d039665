// What every command backlog suite opens per storage target: a migrated database with the test ceiling
// table, and a ledger on it (the PostgreSQL adapter unless the suite brings its own).
import type { Db } from '../../../src/db/db.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import type { StorageTarget, TestDb } from '../../support/databases.ts';
import { createCeilingTable } from './ceilingTable.ts';

/** Opening a migrated database (PGlite above all) is the slow step on a busy two-core machine. */
export const OPEN_TIMEOUT_MS = 180_000;

export interface CommandsDatabase {
  testDb: TestDb;
  store: EventStore;
  /** Closes the ledger, then the database. */
  close(): Promise<void>;
}

export async function openCommandsDatabase(target: StorageTarget, openStore: (db: Db) => EventStore = createPostgresEventStore): Promise<CommandsDatabase> {
  const testDb = await target.open();
  const store = openStore(testDb.db);
  await createCeilingTable(testDb.db);
  return {
    testDb,
    store,
    async close() {
      await store.close();
      await testDb.dispose();
    },
  };
}
