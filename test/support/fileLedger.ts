// One migrated database and one ledger per target for a whole test file: opening PGlite takes seconds, so a
// file's tests share them and keep apart by their own scopes. The ledger is the PostgreSQL/PGlite adapter on
// the database, or EventStoreDB (EVENTSTORE_URL) beside it, as in the service.
import { afterAll, beforeAll, describe } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import type { EventStore } from '../../src/ledger/eventStore.ts';
import { createEventStoreDbEventStore } from '../../src/ledger/eventstoredb/index.ts';
import { createPostgresEventStore } from '../../src/ledger/postgres/postgresEventStore.ts';
import { storageTargets, storageTargetsToRegister, type StorageTarget, type TestDb } from './databases.ts';

/** Where a suite's read models live (`storage`) and which ledger it reads (`openStore`). */
export interface LedgerTarget {
  name: string;
  storage: StorageTarget;
  openStore(db: Db): EventStore;
}

/** The ledger in the database itself, on every storage target. */
export const postgresLedgers: LedgerTarget[] = storageTargets.map((storage) => ({ name: storage.name, storage, openStore: createPostgresEventStore }));

/**
 * describe.each(postgresLedgers), except that without DATABASE_URL the PostgreSQL suite is registered too, as
 * skipped, so the closing line counts its tests (see describeOnEachStorage). `$name` in `name` is the target's.
 */
export function describeOnEachPostgresLedger(name: string, body: (target: LedgerTarget) => void): void {
  for (const { target: storage, skip } of storageTargetsToRegister) {
    describe.skipIf(skip)(name.replaceAll('$name', storage.name), () => body({ name: storage.name, storage, openStore: createPostgresEventStore }));
  }
}

const eventStoreUrl = process.env.EVENTSTORE_URL;

/**
 * The ledger on EventStoreDB (EVENTSTORE_URL), the read models on the first storage target; undefined without
 * EVENTSTORE_URL. Suites run on eventStoreSuiteTarget with describe.skipIf(!eventStoreLedger) after warnWithoutEventStore.
 */
export const eventStoreLedger: LedgerTarget | undefined = eventStoreUrl
  ? { name: 'eventstoredb', storage: storageTargets[0]!, openStore: () => createEventStoreDbEventStore(eventStoreUrl) }
  : undefined;

/**
 * The EventStoreDB target a suite registers its tests on: eventStoreLedger, or without EVENTSTORE_URL a stand-in
 * whose ledger cannot open. Register on it inside describe.skipIf(!eventStoreLedger), so that without a server the
 * suite's tests are collected and show as skipped in the closing line instead of registering nothing (a skipped
 * describe runs neither its hooks nor its tests, so the stand-in is never opened).
 */
export const eventStoreSuiteTarget: LedgerTarget = eventStoreLedger ?? {
  name: 'eventstoredb',
  storage: storageTargets[0]!,
  openStore: () => {
    throw new Error('EVENTSTORE_URL is not set: a suite on EventStoreDB must be skipped (describe.skipIf(!eventStoreLedger))');
  },
};

export function warnWithoutEventStore(suite: string): void {
  if (!eventStoreLedger) console.warn(`EVENTSTORE_URL is not set: the ${suite} on EventStoreDB is skipped (it runs above on the PostgreSQL ledger).`);
}

/**
 * Registers `suite` as "<name> on <ledger>" on every ledger: the PostgreSQL ledger on each storage target
 * (describeOnEachPostgresLedger), and EventStoreDB, skipped with a warning without EVENTSTORE_URL (registered
 * all the same, so that the closing line counts its tests as skipped).
 */
export function describeOnEveryLedger(name: string, suite: (target: LedgerTarget) => void): void {
  describeOnEachPostgresLedger(`${name} on $name`, suite);
  warnWithoutEventStore(name);
  describe.skipIf(!eventStoreLedger)(`${name} on eventstoredb`, () => suite(eventStoreSuiteTarget));
}

export interface FileLedger {
  readonly testDb: TestDb;
  readonly db: Db;
  readonly store: EventStore;
}

/** Call inside a describe: opens the database and ledger before its tests, closes them after. */
export function useFileLedger(target: StorageTarget | LedgerTarget): FileLedger {
  const { storage, openStore } = 'storage' in target ? target : { storage: target, openStore: createPostgresEventStore };
  let testDb: TestDb | undefined;
  let store: EventStore | undefined;

  beforeAll(async () => {
    testDb = await storage.open();
    store = openStore(testDb.db);
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
