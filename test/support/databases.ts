// Every integration suite runs once per storage target: PGlite always, PostgreSQL when DATABASE_URL is set.
// Each test database is isolated: a fresh in-memory PGlite (from a seed, pgliteSeeds.ts), or a fresh schema on
// the real server.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import { openPostgres, quoteIdent } from '../../src/db/postgres.ts';
import { migrate } from '../../src/db/migrate.ts';
import type { EventStore } from '../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../src/ledger/postgres/postgresEventStore.ts';
import { openTestPglite } from './pgliteSeeds.ts';

export interface StorageTarget {
  name: 'pglite' | 'postgres';
  /** Opens a new, empty, migrated database. */
  open(options?: { migrate?: boolean; max?: number }): Promise<TestDb>;
}

export interface TestDb {
  db: Db;
  /** Opens another pool on the same database (another "process" as far as PostgreSQL can tell). */
  connectAgain?(options?: { max?: number }): Db;
  /** Connection settings a child process needs to reach this same database (PostgreSQL only). */
  env?: Record<string, string>;
  dispose(): Promise<void>;
}

export const databaseUrl = process.env.DATABASE_URL;

const pgliteTarget: StorageTarget = {
  name: 'pglite',
  async open(options) {
    const db = await openTestPglite({ migrate: options?.migrate !== false });
    return { db, dispose: () => db.close() };
  },
};

const postgresTarget = (url: string): StorageTarget => ({
  name: 'postgres',
  async open(options) {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const admin = openPostgres({ connectionString: url, max: 1 });
    await admin.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    const opened: Db[] = [];
    const connect = (max?: number) => {
      const db = openPostgres({ connectionString: url, schema, max: max ?? options?.max ?? 10 });
      opened.push(db);
      return db;
    };
    const db = connect();
    if (options?.migrate !== false) await migrate(db);
    return {
      db,
      connectAgain: (again) => connect(again?.max),
      env: { DATABASE_URL: url, GOVERNANCE_DB_SCHEMA: schema },
      async dispose() {
        await Promise.all(opened.map((each) => each.close().catch(() => {})));
        await admin.query(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`).catch(() => {});
        await admin.close();
      },
    };
  },
});

/** The targets this run can reach. PostgreSQL is announced as skipped when DATABASE_URL is not set. */
export const storageTargets: StorageTarget[] = databaseUrl ? [pgliteTarget, postgresTarget(databaseUrl)] : [pgliteTarget];

if (!databaseUrl && !process.env.GOVERNANCE_QUIET_SKIPS) {
  console.warn('DATABASE_URL is not set: PostgreSQL suites are skipped; PGlite suites run.');
}

export const postgresOnly: StorageTarget | undefined = databaseUrl ? postgresTarget(databaseUrl) : undefined;

/** The PostgreSQL target of a run without DATABASE_URL: it registers its suite, skipped, and never opens. */
const unreachablePostgres: StorageTarget = {
  name: 'postgres',
  open: () => Promise.reject(new Error('DATABASE_URL is not set: a suite on PostgreSQL must be skipped')),
};

/**
 * describe.each(storageTargets), except that without DATABASE_URL the PostgreSQL suite is registered too, as
 * skipped: the closing line then counts its tests as skipped instead of the suite registering nothing. A
 * skipped describe runs neither hooks nor tests, so its target is never opened. `$name` in `name` is the
 * target's name.
 */
export function describeOnEachStorage(name: string, body: (target: StorageTarget) => void): void {
  for (const { target, skip } of storageTargetsToRegister) describe.skipIf(skip)(name.replaceAll('$name', target.name), () => body(target));
}

/** Every storage target a suite registers on: PostgreSQL always, to be skipped (`skip`) without DATABASE_URL. */
export const storageTargetsToRegister: ReadonlyArray<{ target: StorageTarget; skip: boolean }> = [
  { target: pgliteTarget, skip: false },
  postgresOnly ? { target: postgresOnly, skip: false } : { target: unreachablePostgres, skip: true },
];

/**
 * One database of `target` for the whole file, with the ledger's event store on it: opened before the file's
 * tests (handed to `opened`) and closed after them. Opening a database is the slow part; each test reads only
 * what it appended.
 */
export function eventStoreForFile(target: StorageTarget, opened: (ledger: { testDb: TestDb; store: EventStore }) => void): void {
  let ledger: { testDb: TestDb; store: EventStore } | undefined;
  beforeAll(async () => {
    const testDb = await target.open();
    ledger = { testDb, store: createPostgresEventStore(testDb.db) };
    opened(ledger);
  });
  afterAll(async () => {
    await ledger?.store.close();
    await ledger?.testDb.dispose();
  });
}
