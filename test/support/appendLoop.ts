// Child process for the append fault test: appends batches of varying size, back to back, until killed.
// It prints `begin <batch>` before each append and `done <batch>` once append() has returned, so the parent
// knows which batches committed and whether its kill landed inside an append. (Writes to a pipe are
// synchronous on Linux, so a line is out before the next step starts.)
// Storage: DATABASE_URL (+ GOVERNANCE_DB_SCHEMA) for PostgreSQL, else the PGlite data directory PGLITE_DIR.
import { randomUUID } from 'node:crypto';
import { openPostgres } from '../../src/db/postgres.ts';
import { openPglite } from '../../src/db/pglite.ts';
import { createPostgresEventStore } from '../../src/ledger/postgres/postgresEventStore.ts';

const db = process.env.DATABASE_URL
  ? openPostgres({ connectionString: process.env.DATABASE_URL, schema: process.env.GOVERNANCE_DB_SCHEMA, max: 2 })
  : await openPglite(process.env.PGLITE_DIR);
const store = createPostgresEventStore(db);
const run = process.env.FAULT_RUN ?? 'run';

for (let k = 0; ; k++) {
  const batch = `${run}-${k}`;
  const size = 1 + ((k * 37) % 120);
  const events = Array.from({ length: size }, (_, n) => ({
    id: randomUUID(),
    type: 'FaultProbe',
    data: { n, padding: 'x'.repeat(200) },
    metadata: { batch, size },
  }));
  process.stdout.write(`begin ${batch}\n`);
  await store.append(`fault-${k % 3}`, events);
  process.stdout.write(`done ${batch}\n`);
}
