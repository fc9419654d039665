// One database and one ledger per target for the whole file (opening PGlite takes seconds); each test
// works in its own counter scope: its own projection, tables and event types.
import { beforeEach, expect, it } from 'vitest';
import { appendInTransaction } from '../../../src/ledger/postgres/appendInTransaction.ts';
import { loadCheckpoint, loadOrCreateCheckpoint, storeCheckpoint } from '../../../src/ledger/checkpoints.ts';
import { ProjectionSuperseded, startProjectionRunner } from '../../../src/ledger/projectionRunner.ts';
import { describeOnEveryLedger, useFileLedger, type LedgerTarget } from '../../support/fileLedger.ts';
import { waitFor } from '../../support/waitFor.ts';
import { readWholeLedger } from '../../support/readLedger.ts';
import {
  appendCounterEvents,
  countApplications,
  counterProjection,
  counterScope,
  createCounterTables,
  readCounters,
  type CounterScope,
} from '../../support/counterProjection.ts';
import { holdOlderTransaction } from '../../support/olderTransaction.ts';
import { StorageUnavailable } from '../../../src/db/storageUnavailable.ts';
import { listQuarantine } from '../../../src/ledger/quarantine.ts';
import { eventData } from '../../../src/ledger/eventStore.ts';
import type { Projection } from '../../../src/ledger/projection.ts';

const suite = (target: LedgerTarget) => {
  const ledger = useFileLedger(target);
  let scope: CounterScope;

  beforeEach(async () => {
    scope = counterScope();
    await createCounterTables(ledger.db, scope);
  });

  it('catches up with the ledger, checkpoints past other event types, then follows live appends', async () => {
    const counted = await appendCounterEvents(ledger.store, scope, 1_000);
    const runner = await startProjectionRunner(ledger.db, ledger.store, counterProjection(scope), { pageSize: 100 });
    try {
      await runner.waitForCaughtUp();
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: counted, distinctEvents: counted });
      // The ledger ends with an event of another type; the checkpoint still stands on it.
      const head = await ledger.store.headPosition();
      expect((await ledger.store.readAll('start', 100_000)).at(-1)?.type).toBe(scope.unrelated);
      expect((await loadCheckpoint(ledger.db, scope.name))?.position).toEqual(head);
      expect(await runner.lag()).toMatchObject({ pending: false, secondsBehind: 0 });

      // Live: nobody asks the runner to look; the subscription wakes it.
      const more = await appendCounterEvents(ledger.store, scope, 40, { offset: 1_000 });
      await waitFor(async () => (await countApplications(ledger.db, scope)).applications === counted + more, {
        description: 'live events applied',
      });
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: counted + more, distinctEvents: counted + more });
    } finally {
      await runner.stop();
    }
  });

  it.skipIf(target.name !== 'postgres')('is not caught up while an event committed before the call is held back by an open transaction', async () => {
    const runner = await startProjectionRunner(ledger.db, ledger.store, counterProjection(scope));
    const holder = ledger.testDb.connectAgain!({ max: 1 });
    try {
      await runner.waitForCaughtUp();
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let written!: () => void;
      const isWritten = new Promise<void>((resolve) => (written = resolve));
      const committed = holder.transaction(async (tx) => {
        await appendInTransaction(tx, `${scope.name}-held`, [{ type: scope.incremented, data: { counter: 'held', by: 1 } }]);
        written();
        await released;
      });
      await isWritten;
      await ledger.store.append(`${scope.name}-after`, [{ type: scope.incremented, data: { counter: 'after', by: 1 } }]);
      // 'after' is committed, but readAll holds it back behind the older open transaction.
      await expect(runner.waitForCaughtUp({ timeoutMs: 500 })).rejects.toThrow(/did not catch up/);
      release();
      await committed;
      await runner.waitForCaughtUp();
      expect((await readCounters(ledger.db, scope)).map((row) => [row.counter, row.events])).toEqual([
        ['after', 1n],
        ['held', 1n],
      ]);
    } finally {
      await runner.stop();
    }
  });

  it('reports a stopped runner behind by the age of its oldest event still to apply, never by other types', async () => {
    const runner = await startProjectionRunner(ledger.db, ledger.store, counterProjection(scope));
    await runner.waitForCaughtUp();
    await runner.stop();
    expect(await runner.lag()).toMatchObject({ pending: false, secondsBehind: 0 });
    // Events of other types flow past: not its business, so not behind, however old they grow.
    await appendCounterEvents(ledger.store, scope, 30, { unrelatedEvery: 1 });
    const unrelatedAt = Date.now();
    await waitFor(async () => Date.now() - unrelatedAt > 300, { description: 'the unrelated events to age' });
    expect(await runner.lag()).toMatchObject({ pending: false, secondsBehind: 0 });
    // Its own events: at once behind, even while the server holds them back from readers (another
    // session's open transaction on a shared PostgreSQL), and by their growing age.
    await appendCounterEvents(ledger.store, scope, 300);
    expect((await runner.lag()).pending).toBe(true);
    await waitFor(async () => (await runner.lag()).secondsBehind > 0.3, { description: 'the lag to grow with the age of the oldest event' });
  });

  it.skipIf(target.name !== 'postgres')('reports a stopped runner behind while its new events are held back by an older open transaction', async () => {
    const runner = await startProjectionRunner(ledger.db, ledger.store, counterProjection(scope));
    await runner.waitForCaughtUp();
    await runner.stop();
    // Any session on the server holding an older xid does this (the snapshot's xmin is server-wide): here
    // a transaction that appends nothing, like another test file's or another service's.
    const older = await holdOlderTransaction(ledger.testDb);
    try {
      await appendCounterEvents(ledger.store, scope, 300);
      expect(await ledger.store.readAll((await runner.lag()).checkpoint, 50)).toEqual([]);
      // Not readable yet, but committed: behind, never "caught up", and by their age.
      expect(await runner.lag()).toMatchObject({ pending: true });
      await waitFor(async () => (await runner.lag()).secondsBehind > 0.2, { description: 'held-back events to show their age' });
    } finally {
      await older.end();
    }
    // Other sessions on a shared server may still hold them back a little longer.
    const checkpoint = (await runner.lag()).checkpoint;
    await waitFor(async () => (await ledger.store.readAll(checkpoint, 50)).length === 50, { description: 'the new events to be readable' });
  });

  it('two runners of one projection, each on its own connection pool, apply each event exactly once', async () => {
    const other = ledger.testDb.connectAgain?.() ?? ledger.db;
    const otherStore = other === ledger.db ? ledger.store : target.openStore(other);
    let counted = await appendCounterEvents(ledger.store, scope, 1_000);
    const first = await startProjectionRunner(ledger.db, ledger.store, counterProjection(scope, { run: 'first' }), { pageSize: 40 });
    const second = await startProjectionRunner(other, otherStore, counterProjection(scope, { run: 'second' }), { pageSize: 40 });
    try {
      counted += await appendCounterEvents(ledger.store, scope, 300, { offset: 1_000, batchSize: 10 });
      await Promise.all([first.waitForCaughtUp({ timeoutMs: 30_000 }), second.waitForCaughtUp({ timeoutMs: 30_000 })]);
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: counted, distinctEvents: counted });
      const totals = await readCounters(ledger.db, scope);
      expect(totals.reduce((sum, row) => sum + Number(row.events), 0)).toBe(counted);
    } finally {
      await Promise.all([first.stop(), second.stop()]);
      if (otherStore !== ledger.store) await otherStore.close();
    }
  });

  it('rebuilds from the start when the stored version is older, and refuses to run an older version', async () => {
    const counted = await appendCounterEvents(ledger.store, scope, 400);
    const v1 = await startProjectionRunner(ledger.db, ledger.store, counterProjection(scope, { version: 1 }));
    await v1.waitForCaughtUp();
    await v1.stop();
    const totalV1 = (await readCounters(ledger.db, scope)).reduce((sum, row) => sum + row.total, 0n);

    const v2 = await startProjectionRunner(ledger.db, ledger.store, counterProjection(scope, { version: 2, factor: 3 }));
    await v2.waitForCaughtUp();
    await v2.stop();
    expect((await readCounters(ledger.db, scope)).reduce((sum, row) => sum + row.total, 0n)).toBe(totalV1 * 3n);
    expect(await countApplications(ledger.db, scope)).toEqual({ applications: counted, distinctEvents: counted });
    expect((await loadCheckpoint(ledger.db, scope.name))?.version).toBe(2);

    await expect(startProjectionRunner(ledger.db, ledger.store, counterProjection(scope, { version: 1 }))).rejects.toBeInstanceOf(ProjectionSuperseded);
  });

  it('moves a checkpoint only from the values it names (compare-and-set)', async () => {
    const created = await loadOrCreateCheckpoint(ledger.db, scope.name, 1);
    expect(created).toEqual({ projection: scope.name, version: 1, position: 'start' });
    const first = { ...created, position: { commit: 10n, prepare: 3n } };
    expect(await ledger.db.transaction((tx) => storeCheckpoint(tx, created, first))).toBe(true);
    // A second runner that still believes the checkpoint is at the start, or at another version, moves nothing.
    expect(await ledger.db.transaction((tx) => storeCheckpoint(tx, created, { ...created, position: { commit: 11n, prepare: 1n } }))).toBe(false);
    expect(await ledger.db.transaction((tx) => storeCheckpoint(tx, { ...first, version: 2 }, { ...first, version: 2 }))).toBe(false);
    expect(await loadCheckpoint(ledger.db, scope.name)).toEqual(first);
    const beyondInt53 = { ...first, position: { commit: 2n ** 62n, prepare: 2n ** 62n + 1n } };
    expect(await ledger.db.transaction((tx) => storeCheckpoint(tx, first, beyondInt53))).toBe(true);
    expect(await loadCheckpoint(ledger.db, scope.name)).toEqual(beyondInt53);
  });

  it('retries a page whose apply failed for the database, without keeping any of it, and reports the fault', async () => {
    const counted = await appendCounterEvents(ledger.store, scope, 120);
    const healthy = counterProjection(scope);
    let failuresLeft = 2;
    const faults: unknown[] = [];
    const flaky = {
      ...healthy,
      async apply(event: Parameters<typeof healthy.apply>[0], tx: Parameters<typeof healthy.apply>[1]) {
        await healthy.apply(event, tx);
        // Fails after its writes, in the middle of a page: the whole page must roll back.
        if ((event.data as { counter: string }).counter === 'c3' && failuresLeft > 0) {
          failuresLeft--;
          // A fault of the database: retried as it is, never a reason to set the event aside.
          throw new StorageUnavailable(new Error('read model unavailable'));
        }
      },
    };
    const runner = await startProjectionRunner(ledger.db, ledger.store, flaky, { pageSize: 50, retryDelayMs: 10, onError: (error) => faults.push(error) });
    try {
      await runner.waitForCaughtUp();
      expect(faults.map(String)).toEqual([
        'StorageUnavailable: the database is unavailable: read model unavailable',
        'StorageUnavailable: the database is unavailable: read model unavailable',
      ]);
      expect(await listQuarantine(ledger.db, { projection: scope.name })).toEqual([]);
      expect(runner.lastError()).toBeUndefined();
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: counted, distinctEvents: counted });
    } finally {
      await runner.stop();
    }
  });

  it('takes live events at its pace in one page, and is never held back by it when asked to catch up', async () => {
    const pages: number[] = [];
    const paced = (livePaceMs: number) => ({ ...counterProjection(scope, { onCommit: (events) => pages.push(events) }), livePaceMs });
    let runner = await startProjectionRunner(ledger.db, ledger.store, paced(1_500));
    try {
      await runner.waitForCaughtUp();
      pages.length = 0;
      // Five appends of one event each (four of the counter's type), well within the pace: one page applies
      // them, or two when the first lands while the pass that caught up is still reading.
      let appended = 0;
      for (let i = 0; i < 5; i++) appended += await appendCounterEvents(ledger.store, scope, 1, { offset: i });
      await waitFor(async () => (await countApplications(ledger.db, scope)).applications === appended, { description: 'live events applied' });
      expect(pages.reduce((sum, events) => sum + events, 0)).toBe(appended);
      expect(pages.length).toBeLessThanOrEqual(2);
    } finally {
      await runner.stop();
    }
    // A pace of a minute: waitForCaughtUp still applies at once.
    runner = await startProjectionRunner(ledger.db, ledger.store, paced(60_000));
    try {
      await runner.waitForCaughtUp();
      const before = (await countApplications(ledger.db, scope)).applications;
      const more = await appendCounterEvents(ledger.store, scope, 3, { offset: 100 });
      await runner.waitForCaughtUp({ timeoutMs: 10_000 });
      expect((await countApplications(ledger.db, scope)).applications).toBe(before + more);
    } finally {
      await runner.stop();
    }
  });

  it('catching up with catchUp, reads on into one page while the events read as text are small, and stops at its bytes', async () => {
    const counted = await appendCounterEvents(ledger.store, scope, 1_000);
    // On a PostgreSQL shared with other suites, a read stops short at their oldest open write transaction
    // (test/support/readLedger.ts), and a short read ends a page: wait until the whole ledger reads at once.
    await readWholeLedger(ledger.store);
    const pages: number[] = [];
    const merging = (catchUp: { reads: number; bytes: number }): Projection => {
      const base = counterProjection(scope, { onCommit: (events) => pages.push(events) });
      return { ...base, readsDataAsJson: true, catchUp, apply: (event, tx) => base.apply({ ...event, data: eventData(event) }, tx) };
    };
    // Reads of 100 events of its type, four to a page: pages of 400 but the last.
    let runner = await startProjectionRunner(ledger.db, ledger.store, merging({ reads: 4, bytes: 1_000_000 }), { pageSize: 100 });
    try {
      await runner.waitForCaughtUp();
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: counted, distinctEvents: counted });
      expect(counted).toBe(750);
      expect(pages).toEqual([400, 350]);
      // Live: a short read ends the page.
      pages.length = 0;
      const more = await appendCounterEvents(ledger.store, scope, 8, { offset: 1_000 });
      await runner.waitForCaughtUp();
      expect(pages.reduce((sum, events) => sum + events, 0)).toBe(more);
    } finally {
      await runner.stop();
    }
    // Bytes below one read's text: one read a page, as without catchUp.
    await ledger.db.exec(`TRUNCATE ${scope.counters}, ${scope.applications}; DELETE FROM gl_checkpoints WHERE projection = '${scope.name}'`);
    pages.length = 0;
    runner = await startProjectionRunner(ledger.db, ledger.store, merging({ reads: 4, bytes: 100 }), { pageSize: 100 });
    try {
      await runner.waitForCaughtUp();
      expect(Math.max(...pages)).toBe(100);
      expect((await countApplications(ledger.db, scope)).applications).toBe(pages.reduce((sum, events) => sum + events, 0));
    } finally {
      await runner.stop();
    }
  });

  it('runs afterPages after its pages in the background, one run at a time, and is caught up only once it has ended', async () => {
    let runs = 0;
    let running = 0;
    let mostAtOnce = 0;
    let fail = false;
    let open!: () => void;
    let gate = new Promise<void>((resolve) => (open = resolve));
    const faults: unknown[] = [];
    const projection: Projection = {
      ...counterProjection(scope),
      async afterPages() {
        runs++;
        mostAtOnce = Math.max(mostAtOnce, ++running);
        try {
          await gate;
          if (fail) throw new Error('roll-up failed');
        } finally {
          running--;
        }
      },
    };
    const counted = await appendCounterEvents(ledger.store, scope, 400);
    const runner = await startProjectionRunner(ledger.db, ledger.store, projection, { pageSize: 100, onError: (error) => faults.push(error) });
    try {
      // The first run holds at the gate from the first page on; the pages go on without it.
      await waitFor(async () => (await countApplications(ledger.db, scope)).applications === counted, { description: 'every page applied while afterPages waits' });
      expect(runs).toBe(1);
      await expect(runner.waitForCaughtUp({ timeoutMs: 300 })).rejects.toThrow(/did not catch up/);
      open();
      await runner.waitForCaughtUp();
      // The pages committed while it ran get one more run after it, not one each.
      expect(runs).toBe(2);
      expect(mostAtOnce).toBe(1);

      // A fault is reported, and the next page runs it again.
      fail = true;
      await appendCounterEvents(ledger.store, scope, 4, { offset: 400 });
      await waitFor(() => faults.length > 0, { description: 'the fault reported' });
      expect(String(faults[0])).toMatch(/roll-up failed/);
      fail = false;
      const before = runs;
      gate = new Promise<void>((resolve) => (open = resolve));
      await appendCounterEvents(ledger.store, scope, 4, { offset: 404 });
      await waitFor(() => runs > before, { description: 'afterPages run again after the next page' });
      open();
      await runner.waitForCaughtUp();
      expect(runner.lastError()).toBeUndefined();
    } finally {
      open();
      await runner.stop();
    }
    expect(running).toBe(0);
  });

  it('hands each committed batch to afterCommit', async () => {
    const counted = await appendCounterEvents(ledger.store, scope, 250);
    let published = 0;
    const projection = counterProjection(scope, { onCommit: (events) => (published += events) });
    const runner = await startProjectionRunner(ledger.db, ledger.store, projection, { pageSize: 64 });
    try {
      await runner.waitForCaughtUp();
      expect(published).toBe(counted);
    } finally {
      await runner.stop();
    }
  });
};

describeOnEveryLedger('projection runner', suite);
