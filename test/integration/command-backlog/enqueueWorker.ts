// A separate OS process that enqueues commands into the same PostgreSQL schema as the test that spawned it.
// COMMANDS_LEDGER picks the path. Protocol: prints {"ready":true} once connected; then, for every line {"commandIds":[...]} on stdin
// (commands of COMMANDS_TENANT) or {"commands":[{"tenantId","commandId","deviceId"?,"payload"?}...]} (of any tenants), runs ENQUEUERS concurrent enqueuers
// over them and prints one line {"outcomes":[...]}, in the order sent. Exits when stdin ends.
import { createInterface } from 'node:readline';
import { openPostgres } from '../../../src/db/postgres.ts';
import { createCommandBacklog } from '../../../src/command-backlog/createCommandBacklog.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import type { EnqueueOutcome } from '../../../src/command-backlog/types.ts';
import { tableCeilingsOfMany } from './ceilingTable.ts';

const ENQUEUERS = 32;
// Connections to the server: 16 per process, so the two processes hold 32 transactions open at once.
const POOL_SIZE = 16;

const tenantId = process.env.COMMANDS_TENANT!;
const db = openPostgres({ connectionString: process.env.DATABASE_URL!, schema: process.env.GOVERNANCE_DB_SCHEMA, max: POOL_SIZE });
const store = createPostgresEventStore(db);
// COMMANDS_LEDGER=stream runs the stream-revision path (the EVENTSTORE_URL one) through the same port.
const ledger = process.env.COMMANDS_LEDGER === 'stream' ? 'stream' : 'database';
const backlog = createCommandBacklog({ db, store, ceilings: tableCeilingsOfMany, ledger });
const actor = { id: `svc:command-delivery-${process.pid}` };

// Open every connection before the start signal, so connecting is not part of the race.
await Promise.all(Array.from({ length: POOL_SIZE }, () => db.transaction((tx) => tx.query('SELECT 1'))));
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);

for await (const line of createInterface({ input: process.stdin })) {
  const request = JSON.parse(line) as { commandIds: string[] } | { commands: Array<{ tenantId: string; commandId: string; deviceId?: string; payload?: unknown }> };
  const commands = 'commands' in request ? request.commands : request.commandIds.map((commandId) => ({ tenantId, commandId }));
  const pending = commands.map((command, i) => ({ ...command, i }));
  const outcomes: EnqueueOutcome[] = [];
  await Promise.all(
    Array.from({ length: ENQUEUERS }, async () => {
      for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
        const { commandId, i } = next;
        const { deviceId = `device-${commandId}`, payload = { action: 'unlock' } } = next as { deviceId?: string; payload?: unknown };
        outcomes[i] = await backlog.enqueue(actor, { tenantId: next.tenantId, commandId, deviceId, payload });
      }
    }),
  );
  process.stdout.write(`${JSON.stringify({ outcomes })}\n`);
}
await store.close();
await db.close();
