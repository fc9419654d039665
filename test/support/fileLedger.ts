// One migrated database and one ledger (the PostgreSQL/PGlite adapter) per storage target for a whole test
// file: opening PGlite takes seconds, so a file's tests share them and keep apart by their own scopes.
import { afterAll, beforeAll } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import type { EventStore } from '../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../src/ledger/postgres/postgresEventStore.ts';
import type { StorageTarget, TestDb } from './databases.ts';

export interface FileLedger {
  readonly testDb: TestDb;
  readonly db: Db;
  readonly store: EventStore;
}

/** Call inside a describe: opens the database and ledger before its tests, closes them after. */
export function useFileLedger(target: StorageTarget): FileLedger {
  let testDb: TestDb | undefined;
  let store: EventStore | undefined;

  beforeAll(async () => {
    testDb = await target.open();
    store = createPostgresEventStore(testDb.db);
  });

  afterAll(async () => {
    await store?.close();
    await testDb?.dispose();
  });

  return {
    get testDb() {
      if (!testDb) throw new Error('the file ledger is open only from beforeAll to afterAll');
      return testDb;
    },
    get db() {
      if (!testDb) throw new Error('the file ledger is open only from beforeAll to afterAll');
      return testDb.db;
    },
    get store() {
      if (!store) throw new Error('the file ledger is open only from beforeAll to afterAll');
      return store;
    },
  };
}
