// The projection quarantine (src/ledger/quarantine.ts) on the runner: an event the projection refuses, or whose
// application throws a fault that is not the database's, is set aside with its reason in the transaction that
// moves the checkpoint past it, and every other event is applied exactly once; a fault of the database is
// retried and sets nothing aside; a rebuild empties the quarantine and the replay fills it again.
import { beforeEach, describe, expect, it } from 'vitest';
import type { Tx } from '../../../src/db/db.ts';
import type { NewEvent, RecordedEvent } from '../../../src/ledger/eventStore.ts';
import type { Projection } from '../../../src/ledger/projection.ts';
import { startProjectionRunner, type QuarantineNotice } from '../../../src/ledger/projectionRunner.ts';
import { listQuarantine, isTransientFault } from '../../../src/ledger/quarantine.ts';
import { loadCheckpoint } from '../../../src/ledger/checkpoints.ts';
import { rebuildProjection } from '../../../src/ledger/rebuild.ts';
import { StorageUnavailable } from '../../../src/db/storageUnavailable.ts';
import { postgresLedgers } from '../../support/fileLedger.ts';
import { useFileLedger, type LedgerTarget } from '../../support/fileLedger.ts';
import { countApplications, counterProjection, counterScope, createCounterTables, readCounters, type CounterScope } from '../../support/counterProjection.ts';

const POISON = 'poison';

/** 60 increments over three counters, the poison counter at the given places (each `by` 1). */
async function appendWithPoison(ledger: { store: { append(stream: string, events: NewEvent[]): Promise<unknown> } }, scope: CounterScope, poisonAt: readonly number[]) {
  const events: NewEvent[] = [];
  for (let n = 0; n < 60; n++) {
    events.push({ type: scope.incremented, data: { counter: poisonAt.includes(n) ? POISON : `c${n % 3}`, by: 1 } });
  }
  await ledger.store.append(`${scope.name}-stream`, events);
  return events.length - poisonAt.length;
}

const counterOf = (event: RecordedEvent) => (event.data as { counter: string }).counter;

const suite = (target: LedgerTarget) => {
  const ledger = useFileLedger(target);
  let scope: CounterScope;

  beforeEach(async () => {
    scope = counterScope();
    await createCounterTables(ledger.db, scope);
  });

  it('sets aside an event the projection refuses, with its reason, and applies the rest of the page exactly once', async () => {
    const healthy = counterProjection(scope);
    const refusing: Projection = {
      ...healthy,
      apply: (event, tx) => (counterOf(event) === POISON ? Promise.resolve({ refused: 'the poison counter is out of bounds' }) : healthy.apply(event, tx)),
    };
    const applied = await appendWithPoison(ledger, scope, [7, 33]);
    const notices: QuarantineNotice[] = [];
    const runner = await startProjectionRunner(ledger.db, ledger.store, refusing, { pageSize: 25, onQuarantined: (notice) => notices.push(notice) });
    try {
      await runner.waitForCaughtUp();
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: applied, distinctEvents: applied });
      const poison = (await ledger.store.readAll('start', 1_000, { types: [scope.incremented] })).filter((event) => counterOf(event) === POISON);
      const quarantined = await listQuarantine(ledger.db, { projection: scope.name });
      expect(quarantined.map((event) => [event.id, event.type, event.stream, event.position, event.reason])).toEqual(
        poison.map((event) => [event.id, scope.incremented, `${scope.name}-stream`, event.position, 'the poison counter is out of bounds']),
      );
      expect(notices.map((notice) => notice.id)).toEqual(poison.map((event) => event.id));
      expect((await readCounters(ledger.db, scope)).map((row) => row.counter)).toEqual(['c0', 'c1', 'c2']);
      expect(runner.lastError()).toBeUndefined();
    } finally {
      await runner.stop();
    }
  });

  it('applies a page whose apply throws one event at a time, and sets aside the event that throws alone twice', async () => {
    const healthy = counterProjection(scope);
    const calls = new Map<string, number>();
    const throwing: Projection = {
      ...healthy,
      async apply(event, tx) {
        await healthy.apply(event, tx);
        // After its writes, in the middle of the page: nothing of the page may stay.
        if (counterOf(event) === POISON) {
          calls.set(event.id, (calls.get(event.id) ?? 0) + 1);
          throw new TypeError('Cannot read properties of undefined (reading "window")');
        }
      },
    };
    const applied = await appendWithPoison(ledger, scope, [12]);
    const faults: unknown[] = [];
    const runner = await startProjectionRunner(ledger.db, ledger.store, throwing, { pageSize: 25, retryDelayMs: 10, onError: (error) => faults.push(error) });
    try {
      await runner.waitForCaughtUp();
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: applied, distinctEvents: applied });
      const quarantined = await listQuarantine(ledger.db, { projection: scope.name });
      expect(quarantined).toHaveLength(1);
      expect(quarantined[0]!.reason).toBe(`its application failed 2 times alone: TypeError: Cannot read properties of undefined (reading "window")`);
      // Once in the page, twice alone; then never again.
      expect([...calls.values()]).toEqual([3]);
      expect(faults).toHaveLength(3);
      expect(runner.lastError()).toBeUndefined();
      expect((await loadCheckpoint(ledger.db, scope.name))?.position).toEqual(await ledger.store.headPosition());
    } finally {
      await runner.stop();
    }
  });

  it('sets aside what a page-at-once projection refuses or throws on, and keeps nothing of a page that threw', async () => {
    const healthy = counterProjection(scope);
    const pageAtOnce: Projection = {
      ...healthy,
      async applyPage(events: readonly RecordedEvent[], tx: Tx) {
        const refused = [];
        for (const event of events) {
          if (counterOf(event) === 'refuse-me') refused.push({ event, reason: 'refused by the page' });
          else await healthy.apply(event, tx);
        }
        if (events.some((event) => counterOf(event) === POISON)) throw new RangeError('a summary spans 1000000000000 s');
        return refused;
      },
    };
    const events: NewEvent[] = [];
    for (let n = 0; n < 30; n++) events.push({ type: scope.incremented, data: { counter: n === 4 ? POISON : n === 20 ? 'refuse-me' : 'c', by: 1 } });
    await ledger.store.append(`${scope.name}-stream`, events);
    const runner = await startProjectionRunner(ledger.db, ledger.store, pageAtOnce, { pageSize: 50, retryDelayMs: 10 });
    try {
      await runner.waitForCaughtUp();
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: 28, distinctEvents: 28 });
      const quarantined = await listQuarantine(ledger.db, { projection: scope.name });
      expect(quarantined.map((event) => event.reason)).toEqual([
        'its application failed 2 times alone: RangeError: a summary spans 1000000000000 s',
        'refused by the page',
      ]);
    } finally {
      await runner.stop();
    }
  });

  it('retries a fault of the database for as long as it lasts and sets nothing aside for it', async () => {
    const healthy = counterProjection(scope);
    let failuresLeft = 6;
    const serializationFailure = Object.assign(new Error('could not serialize access due to concurrent update'), { code: '40001' });
    const flaky: Projection = {
      ...healthy,
      async apply(event, tx) {
        if (counterOf(event) === POISON && failuresLeft > 0) {
          failuresLeft--;
          throw failuresLeft % 2 === 0 ? serializationFailure : new StorageUnavailable(new Error('Connection terminated unexpectedly'));
        }
        await healthy.apply(event, tx);
      },
    };
    const applied = await appendWithPoison(ledger, scope, [3]);
    const runner = await startProjectionRunner(ledger.db, ledger.store, flaky, { pageSize: 25, retryDelayMs: 10 });
    try {
      await runner.waitForCaughtUp();
      expect(failuresLeft).toBe(0);
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: applied + 1, distinctEvents: applied + 1 });
      expect(await listQuarantine(ledger.db, { projection: scope.name })).toEqual([]);
    } finally {
      await runner.stop();
    }
  });

  it('is emptied by a rebuild, and the replay sets aside again what it still cannot apply', async () => {
    const healthy = counterProjection(scope);
    const refusing: Projection = {
      ...healthy,
      apply: (event, tx) => (counterOf(event) === POISON ? Promise.resolve({ refused: 'still out of bounds' }) : healthy.apply(event, tx)),
    };
    const applied = await appendWithPoison(ledger, scope, [0, 59]);
    const runner = await startProjectionRunner(ledger.db, ledger.store, refusing, { pageSize: 25 });
    await runner.waitForCaughtUp();
    await runner.stop();
    const before = await listQuarantine(ledger.db, { projection: scope.name });
    expect(before).toHaveLength(2);
    const result = await rebuildProjection(ledger.db, ledger.store, refusing, { pageSize: 10 });
    expect(result).toMatchObject({ eventsRead: 60, eventsApplied: applied });
    const after = await listQuarantine(ledger.db, { projection: scope.name });
    expect(after.map((event) => [event.id, event.reason])).toEqual(before.map((event) => [event.id, event.reason]));
    expect(await countApplications(ledger.db, scope)).toEqual({ applications: applied, distinctEvents: applied });
  });
};

describe('isTransientFault', () => {
  it("tells the database's faults from the events'", () => {
    expect(isTransientFault(new StorageUnavailable(new Error('gone')))).toBe(true);
    expect(isTransientFault(Object.assign(new Error('deadlock detected'), { code: '40P01' }))).toBe(true);
    expect(isTransientFault(Object.assign(new Error('could not serialize access'), { code: '40001' }))).toBe(true);
    expect(isTransientFault(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isTransientFault(new Error('wrapped', { cause: Object.assign(new Error('disk full'), { code: '53100' }) }))).toBe(true);
    // A schema or permission that fails every event alike is no reason to set the ledger aside.
    expect(isTransientFault(Object.assign(new Error('relation "gl_admission_trends_minute" does not exist'), { code: '42P01' }))).toBe(true);
    expect(isTransientFault(Object.assign(new Error('permission denied for table gl_checkpoints'), { code: '42501' }))).toBe(true);
    expect(isTransientFault(Object.assign(new Error('timestamp out of range'), { code: '22008' }))).toBe(false);
    expect(isTransientFault(Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }))).toBe(false);
    expect(isTransientFault(new RangeError('Invalid array length'))).toBe(false);
    expect(isTransientFault(new TypeError('x is undefined'))).toBe(false);
  });
});

for (const target of postgresLedgers) {
  describe(`projection quarantine on '${target.name}'`, () => suite(target));
}
