// Child process of projectionCrash.test.ts: runs the counter projection until caught up, printing
// "applied N" after each committed page so the parent can SIGKILL it mid-way.
import { readSettings } from '../../../src/config.ts';
import { openDb } from '../../../src/db/open.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { startProjectionRunner } from '../../../src/ledger/projectionRunner.ts';
import { counterProjection, counterScope } from '../../support/counterProjection.ts';

const settings = readSettings();
const db = await openDb(settings);
const store = createPostgresEventStore(db);
let applied = 0;
const projection = counterProjection(counterScope(process.env.CRASH_SCOPE), {
  run: process.env.CRASH_RUN ?? 'child',
  onCommit: (events) => {
    applied += events;
    process.stdout.write(`applied ${applied}\n`);
  },
});
const runner = await startProjectionRunner(db, store, projection, { pageSize: Number(process.env.CRASH_PAGE_SIZE ?? 500) });
await runner.waitForCaughtUp({ timeoutMs: 60_000 });
await runner.stop();
await store.close();
await db.close();
process.stdout.write('caught-up\n');
