// A fresh PostgreSQL schema for one benchmark run, migrated, and dropped at the end whatever happens, so runs
// never see each other's rows and leave nothing behind.
import { randomBytes } from 'node:crypto';
import type { Db } from '../../src/db/db.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openPostgres, quoteIdent } from '../../src/db/postgres.ts';
import type { EventStore } from '../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../src/ledger/postgres/postgresEventStore.ts';

/** Runs `run` on a pool of `maxConnections` to a new migrated schema, then drops the schema. */
export async function withBenchSchema<T>(url: string, maxConnections: number, run: (db: Db, schema: string) => Promise<T>): Promise<T> {
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const admin = openPostgres({ connectionString: url, max: 1 });
  await admin.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
  const db = openPostgres({ connectionString: url, schema, max: maxConnections });
  try {
    await migrate(db);
    return await run(db, schema);
  } finally {
    await db.close();
    await admin.query(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`);
    await admin.close();
  }
}

/** withBenchSchema with the ledger on it; the store is closed before the schema is dropped. */
export function withBenchLedger<T>(url: string, maxConnections: number, run: (db: Db, store: EventStore, schema: string) => Promise<T>): Promise<T> {
  return withBenchSchema(url, maxConnections, async (db, schema) => {
    const store = createPostgresEventStore(db);
    try {
      return await run(db, store, schema);
    } finally {
      await store.close();
    }
  });
}
