import { beforeEach, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import { CheckpointOfAnotherLedger, loadCheckpoint } from '../../../src/ledger/checkpoints.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { startProjectionRunner } from '../../../src/ledger/projectionRunner.ts';
import { rebuildProjection, type RebuildProgress } from '../../../src/ledger/rebuild.ts';
import { describeOnEveryLedger, useFileLedger, type LedgerTarget } from '../../support/fileLedger.ts';
import {
  appendCounterEvents,
  countApplications,
  counterProjection,
  counterScope,
  createCounterTables,
  type CounterScope,
} from '../../support/counterProjection.ts';

async function snapshotReadModel(db: Db, scope: CounterScope) {
  const counters = await db.query(`SELECT counter, total, events, last_event FROM ${scope.counters} ORDER BY counter`);
  const applications = await db.query(`SELECT event_id FROM ${scope.applications} ORDER BY event_id`);
  return { counters: counters.rows, applications: applications.rows };
}

const suite = (target: LedgerTarget) => {
  const ledger = useFileLedger(target);
  let scope: CounterScope;

  beforeEach(async () => {
    scope = counterScope();
    await createCounterTables(ledger.db, scope);
  });

  it('replays the ledger into a read model identical to the incrementally built one, reporting progress', async () => {
    const projection = counterProjection(scope);
    const runner = await startProjectionRunner(ledger.db, ledger.store, projection, { pageSize: 37 });
    let counted = 0;
    try {
      // Built incrementally: appends arrive in several rounds while the runner follows.
      for (let round = 0; round < 4; round++) {
        counted += await appendCounterEvents(ledger.store, scope, 250, { offset: round * 250, batchSize: 25 });
        await runner.waitForCaughtUp();
      }
    } finally {
      await runner.stop();
    }
    const incremental = await snapshotReadModel(ledger.db, scope);
    const checkpointBefore = await loadCheckpoint(ledger.db, projection.name);
    // The replay reads only the projection's own types.
    const ledgerSize = (await ledger.store.readAll('start', 1_000_000, { types: projection.eventTypes })).length;
    expect(ledgerSize).toBe(counted);

    const progress: RebuildProgress[] = [];
    const result = await rebuildProjection(ledger.db, ledger.store, projection, { pageSize: 100, onProgress: (step) => progress.push(step) });

    expect(await snapshotReadModel(ledger.db, scope)).toEqual(incremental);
    expect(await countApplications(ledger.db, scope)).toEqual({ applications: counted, distinctEvents: counted });
    expect(await loadCheckpoint(ledger.db, projection.name)).toEqual(checkpointBefore);
    expect(result).toMatchObject({ projection: scope.name, eventsRead: ledgerSize, eventsApplied: counted });
    expect(progress[0]).toMatchObject({ done: 0, total: ledgerSize });
    expect(progress.at(-1)).toMatchObject({ done: ledgerSize, total: ledgerSize, etaSeconds: 0 });
    expect(progress.every((step, i) => i === 0 || step.done >= progress[i - 1]!.done)).toBe(true);
    expect(progress.at(-1)!.ratePerSecond).toBeGreaterThan(0);
  });

  it('empties a read model that no event of its types supports', async () => {
    await ledger.db.query(`INSERT INTO ${scope.counters} VALUES ('stale', 1, 1, gen_random_uuid())`);
    const result = await rebuildProjection(ledger.db, ledger.store, counterProjection(scope));
    expect(result.eventsApplied).toBe(0);
    expect(await snapshotReadModel(ledger.db, scope)).toEqual({ counters: [], applications: [] });
  });

  it('refuses to start a runner on a checkpoint of another ledger, naming the rebuild, and runs on it after the rebuild', async () => {
    const projection = counterProjection(scope);
    const own = await ledger.store.identity();
    expect(own).toMatchObject({ kind: 'postgres' });
    expect(await ledger.store.identity()).toEqual(own);
    const runner = await startProjectionRunner(ledger.db, ledger.store, projection);
    try {
      await appendCounterEvents(ledger.store, scope, 20);
      await runner.waitForCaughtUp();
    } finally {
      await runner.stop();
    }
    expect((await loadCheckpoint(ledger.db, projection.name))?.ledger).toEqual(own);

    // The same database with EVENTSTORE_URL set: a ledger of another kind and id (its reads here are beside the point).
    const elsewhere = { kind: 'eventstoredb', id: 'another-cluster' } as const;
    const other: EventStore = { ...ledger.store, identity: async () => elsewhere };
    const refused = await startProjectionRunner(ledger.db, other, projection).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CheckpointOfAnotherLedger);
    expect((refused as Error).message).toContain(`governance projections rebuild ${projection.name}`);
    expect(refused).toMatchObject({ stored: own, current: elsewhere });

    await rebuildProjection(ledger.db, other, projection);
    expect((await loadCheckpoint(ledger.db, projection.name))?.ledger).toEqual(elsewhere);
    const moved = await startProjectionRunner(ledger.db, other, projection);
    await moved.stop();
    await expect(startProjectionRunner(ledger.db, ledger.store, projection)).rejects.toBeInstanceOf(CheckpointOfAnotherLedger);
  });
};

describeOnEveryLedger('projection rebuild', suite);
