import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { loadCheckpoint } from '../../../src/ledger/checkpoints.ts';
import { ProjectionSuperseded, startProjectionRunner } from '../../../src/ledger/projectionRunner.ts';
import { storageTargets, type TestDb } from '../../support/databases.ts';
import { waitFor } from '../../support/waitFor.ts';
import {
  COUNTER_INCREMENTED,
  COUNTER_TABLES_SQL,
  appendCounterEvents,
  countApplications,
  counterProjection,
  readCounters,
} from '../../support/counterProjection.ts';

describe.each(storageTargets)('projection runner on $name', (target) => {
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

  it('catches up with the ledger, checkpoints past other event types, then follows live appends', async () => {
    const counted = await appendCounterEvents(store, 1_000);
    const runner = await startProjectionRunner(db, store, counterProjection(), { pageSize: 100 });
    try {
      await runner.waitForCaughtUp();
      expect(await countApplications(db)).toEqual({ applications: counted, distinctEvents: counted });
      // The ledger ends with an event of another type; the checkpoint still stands on it.
      const lastOfAll = (await store.readAll('start', 10_000)).at(-1)!;
      expect(lastOfAll.type).not.toBe(COUNTER_INCREMENTED);
      expect((await loadCheckpoint(db, 'counter'))?.position).toEqual(lastOfAll.position);
      expect(await runner.lag()).toMatchObject({ eventsBehind: 0, secondsBehind: 0 });

      // Live: nobody asks the runner to look; the subscription wakes it.
      const more = await appendCounterEvents(store, 40, { offset: 1_000 });
      await waitFor(async () => (await countApplications(db)).applications === counted + more, { description: 'live events applied' });
      expect(await countApplications(db)).toEqual({ applications: counted + more, distinctEvents: counted + more });
    } finally {
      await runner.stop();
    }
  });

  it('reports how far behind the ledger a stopped runner is', async () => {
    const runner = await startProjectionRunner(db, store, counterProjection());
    await runner.waitForCaughtUp();
    await runner.stop();
    expect(await runner.lag()).toMatchObject({ eventsBehind: 0, eventsBehindIsLowerBound: false, secondsBehind: 0 });
    await appendCounterEvents(store, 300);
    const lag = await runner.lag({ probeLimit: 50 });
    expect(lag).toMatchObject({ eventsBehind: 50, eventsBehindIsLowerBound: true });
    expect(lag.secondsBehind).toBeGreaterThanOrEqual(0);
  });

  it('two runners of one projection, each on its own connection pool, apply each event exactly once', async () => {
    const other = testDb.connectAgain?.() ?? db;
    const otherStore = other === db ? store : createPostgresEventStore(other);
    let counted = await appendCounterEvents(store, 1_500);
    const first = await startProjectionRunner(db, store, counterProjection({ run: 'first' }), { pageSize: 40 });
    const second = await startProjectionRunner(other, otherStore, counterProjection({ run: 'second' }), { pageSize: 40 });
    try {
      counted += await appendCounterEvents(store, 500, { offset: 1_500, batchSize: 10 });
      await Promise.all([first.waitForCaughtUp({ timeoutMs: 30_000 }), second.waitForCaughtUp({ timeoutMs: 30_000 })]);
      expect(await countApplications(db)).toEqual({ applications: counted, distinctEvents: counted });
      const totals = await readCounters(db);
      expect(totals.reduce((sum, row) => sum + Number(row.events), 0)).toBe(counted);
    } finally {
      await Promise.all([first.stop(), second.stop()]);
      if (otherStore !== store) await otherStore.close();
    }
  });

  it('rebuilds from the start when the stored version is older, and refuses to run an older version', async () => {
    const counted = await appendCounterEvents(store, 400);
    const v1 = await startProjectionRunner(db, store, counterProjection({ version: 1 }));
    await v1.waitForCaughtUp();
    await v1.stop();
    const totalV1 = (await readCounters(db)).reduce((sum, row) => sum + row.total, 0n);

    const v2 = await startProjectionRunner(db, store, counterProjection({ version: 2, factor: 3 }));
    await v2.waitForCaughtUp();
    await v2.stop();
    expect((await readCounters(db)).reduce((sum, row) => sum + row.total, 0n)).toBe(totalV1 * 3n);
    expect(await countApplications(db)).toEqual({ applications: counted, distinctEvents: counted });
    expect((await loadCheckpoint(db, 'counter'))?.version).toBe(2);

    await expect(startProjectionRunner(db, store, counterProjection({ version: 1 }))).rejects.toBeInstanceOf(ProjectionSuperseded);
  });

  it('hands each committed batch to afterCommit', async () => {
    const counted = await appendCounterEvents(store, 250);
    let published = 0;
    const runner = await startProjectionRunner(db, store, counterProjection({ onCommit: (events) => (published += events) }), { pageSize: 64 });
    try {
      await runner.waitForCaughtUp();
      expect(published).toBe(counted);
    } finally {
      await runner.stop();
    }
  });
});
