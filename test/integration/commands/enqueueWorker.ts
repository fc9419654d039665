// A separate OS process that enqueues commands into the same PostgreSQL schema as the test that spawned it.
// COMMANDS_LEDGER picks the path. Protocol: prints {"ready":true} once connected; then, for every line {"commandIds":[...]} on stdin, runs
// ENQUEUERS concurrent enqueuers over those ids and prints one line {"outcomes":[...]}. Exits when stdin ends.
import { createInterface } from 'node:readline';
import { openPostgres } from '../../../src/db/postgres.ts';
import { createCommandBacklog } from '../../../src/commands/createCommandBacklog.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import type { EnqueueOutcome } from '../../../src/commands/types.ts';
import { tableCeilings } from './ceilingTable.ts';

const ENQUEUERS = 32;
// Connections to the server: 16 per process, so the two processes hold 32 transactions open at once.
const POOL_SIZE = 16;

const tenantId = process.env.COMMANDS_TENANT!;
const db = openPostgres({ connectionString: process.env.DATABASE_URL!, schema: process.env.GOVERNANCE_DB_SCHEMA, max: POOL_SIZE });
const store = createPostgresEventStore(db);
// COMMANDS_LEDGER=stream runs the stream-revision path (the EVENTSTORE_URL one) through the same port.
const ledger = process.env.COMMANDS_LEDGER === 'stream' ? 'stream' : 'database';
const backlog = createCommandBacklog({ db, store, ceilings: tableCeilings, ledger });
const actor = { id: `svc:command-delivery-${process.pid}` };

// Open every connection before the start signal, so connecting is not part of the race.
await Promise.all(Array.from({ length: POOL_SIZE }, () => db.transaction((tx) => tx.query('SELECT 1'))));
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);

for await (const line of createInterface({ input: process.stdin })) {
  const { commandIds } = JSON.parse(line) as { commandIds: string[] };
  const pending = [...commandIds];
  const outcomes: EnqueueOutcome[] = [];
  await Promise.all(
    Array.from({ length: ENQUEUERS }, async () => {
      for (let commandId = pending.shift(); commandId !== undefined; commandId = pending.shift()) {
        outcomes.push(await backlog.enqueue(actor, { tenantId, commandId, deviceId: `device-${commandId}`, payload: { action: 'unlock' } }));
      }
    }),
  );
  process.stdout.write(`${JSON.stringify({ outcomes })}\n`);
}
await store.close();
await db.close();
