// Projection catch-up: the counter projection catching up over a ledger of BENCH_EVENTS events (default
// 10k, kept small so the run stays under a minute on a busy machine) through the runner (checkpointed pages
// with compare-and-set), against a hand-written loop over the same pages that applies the same writes in
// one transaction per page without a checkpoint. The ratio is what the runner's bookkeeping costs. The two
// alternate, ROUNDS times each, best of each counts, so a load spike on the shared machine does not
// decide the ratio. Also reports raw readAll throughput. On a fresh schema, dropped at the end. Last line: JSON.
import type { Db } from '../src/db/db.ts';
import type { Checkpoint, EventStore, RecordedEvent } from '../src/ledger/eventStore.ts';
import { startProjectionRunner } from '../src/ledger/projectionRunner.ts';
import { appendCounterEvents, countApplications, counterProjection, counterScope, createCounterTables } from '../test/support/counterProjection.ts';
import { withBenchLedger } from './support/benchSchema.ts';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000);
const ROUNDS = 2;
const PAGE_SIZE = 500;
const scope = counterScope('bench');

/** Events per second of walking the whole ledger in readAll pages, handing each page to `onPage`. */
async function pagedRate(store: EventStore, onPage: (page: RecordedEvent[]) => Promise<void>): Promise<number> {
  const started = performance.now();
  let after: Checkpoint = 'start';
  let read = 0;
  for (;;) {
    const page = await store.readAll(after, PAGE_SIZE);
    const last = page.at(-1);
    if (!last) break;
    await onPage(page);
    read += page.length;
    after = last.position;
  }
  return read / ((performance.now() - started) / 1000);
}

function readAllRate(store: EventStore): Promise<number> {
  return pagedRate(store, async () => {});
}

async function handWrittenRate(db: Db, store: EventStore): Promise<number> {
  const projection = counterProjection(scope, { run: 'baseline' });
  const types = new Set(projection.eventTypes);
  return pagedRate(store, (page) =>
    db.transaction(async (tx) => {
      for (const event of page) if (types.has(event.type)) await projection.apply(event, tx);
    }),
  );
}

async function runnerRate(db: Db, store: EventStore): Promise<number> {
  const started = performance.now();
  const runner = await startProjectionRunner(db, store, counterProjection(scope, { run: 'runner' }), { pageSize: PAGE_SIZE });
  try {
    await runner.waitForCaughtUp({ timeoutMs: 120_000 });
  } finally {
    await runner.stop();
  }
  return EVENTS / ((performance.now() - started) / 1000);
}

async function main() {
  await withBenchLedger(url, 4, async (db, store) => {
    await createCounterTables(db, scope);
    const counted = await appendCounterEvents(store, scope, EVENTS, { batchSize: 1_000 });
    console.log(`ledger: ${EVENTS} events, ${counted} of them counter increments`);

    const readAllPerSecond = await readAllRate(store);
    console.log(`raw readAll: ${Math.round(readAllPerSecond)} events/s`);
    let baseline = 0;
    let ours = 0;
    for (let round = 0; round < ROUNDS; round++) {
      await db.exec(`TRUNCATE ${scope.counters}, ${scope.applications}`);
      const handWritten = await handWrittenRate(db, store);
      console.log(`hand-written apply loop: ${Math.round(handWritten)} events/s`);
      await db.exec(`TRUNCATE ${scope.counters}, ${scope.applications}; DELETE FROM gl_checkpoints`);
      const runner = await runnerRate(db, store);
      console.log(`projection runner: ${Math.round(runner)} events/s`);
      baseline = Math.max(baseline, handWritten);
      ours = Math.max(ours, runner);
    }

    const applied = await countApplications(db, scope);
    if (applied.applications !== counted || applied.distinctEvents !== counted) {
      throw new Error(`runner applied ${applied.applications} (${applied.distinctEvents} distinct), expected ${counted}`);
    }
    console.log(
      JSON.stringify({
        bench: 'projection-catchup',
        ours: Math.round(ours),
        baseline: Math.round(baseline),
        ratio: Number((ours / baseline).toFixed(3)),
        unit: 'events/s',
        baselineIs: 'a bare minimum: a hand-written loop over the same pages applying the same writes, one transaction a page, no checkpoint',
        generator: 'the runner and the loop in the bench process, PostgreSQL shared, unpinned',
        events: EVENTS,
        applied: counted,
        pageSize: PAGE_SIZE,
        readAllPerSecond: Math.round(readAllPerSecond),
      }),
    );
  });
}

await main();
