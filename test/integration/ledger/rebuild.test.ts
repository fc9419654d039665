import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { loadCheckpoint } from '../../../src/ledger/checkpoints.ts';
import { startProjectionRunner } from '../../../src/ledger/projectionRunner.ts';
import { rebuildProjection, type RebuildProgress } from '../../../src/ledger/rebuild.ts';
import { storageTargets, type TestDb } from '../../support/databases.ts';
import { COUNTER_TABLES_SQL, appendCounterEvents, countApplications, counterProjection } from '../../support/counterProjection.ts';

async function snapshotReadModel(db: Db) {
  const counters = await db.query('SELECT counter, total, events FROM test_counters ORDER BY counter');
  const applications = await db.query('SELECT event_id FROM test_counter_applications ORDER BY event_id');
  return { counters: counters.rows, applications: applications.rows };
}

describe.each(storageTargets)('projection rebuild on $name', (target) => {
  let testDb: TestDb;
  let db: Db;
  let store: EventStore;

  beforeEach(async () => {
    testDb = await target.open();
    db = testDb.db;
    await db.exec(COUNTER_TABLES_SQL);
    store = createPostgresEventStore(db);
  });

  afterEach(async () => {
    await store.close();
    await testDb.dispose();
  });

  it('replays the ledger into a read model identical to the incrementally built one, reporting progress', async () => {
    const projection = counterProjection();
    const runner = await startProjectionRunner(db, store, projection, { pageSize: 37 });
    let counted = 0;
    try {
      // Built incrementally: appends arrive in several rounds while the runner follows.
      for (let round = 0; round < 4; round++) {
        counted += await appendCounterEvents(store, 250, { offset: round * 250, batchSize: 25 });
        await runner.waitForCaughtUp();
      }
    } finally {
      await runner.stop();
    }
    const incremental = await snapshotReadModel(db);
    const checkpointBefore = await loadCheckpoint(db, projection.name);

    const progress: RebuildProgress[] = [];
    const result = await rebuildProjection(db, store, projection, { pageSize: 100, onProgress: (step) => progress.push(step) });

    expect(await snapshotReadModel(db)).toEqual(incremental);
    expect(await countApplications(db)).toEqual({ applications: counted, distinctEvents: counted });
    expect(await loadCheckpoint(db, projection.name)).toEqual(checkpointBefore);
    expect(result).toMatchObject({ projection: 'counter', eventsRead: 1_000, eventsApplied: counted });
    expect(progress[0]).toMatchObject({ done: 0, total: 1_000 });
    expect(progress.at(-1)).toMatchObject({ done: 1_000, total: 1_000, etaSeconds: 0 });
    expect(progress.every((step, i) => i === 0 || step.done >= progress[i - 1]!.done)).toBe(true);
    expect(progress.at(-1)!.ratePerSecond).toBeGreaterThan(0);
  });

  it('rebuilds an empty ledger into an empty read model', async () => {
    await db.query("INSERT INTO test_counters VALUES ('stale', 1, 1)");
    const result = await rebuildProjection(db, store, counterProjection());
    expect(result).toMatchObject({ eventsRead: 0, eventsApplied: 0 });
    expect(await snapshotReadModel(db)).toEqual({ counters: [], applications: [] });
  });
});
