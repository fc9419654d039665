import { describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import type { Projection } from '../../../src/ledger/projection.ts';
import { startProjections } from '../../../src/ledger/projectionSet.ts';
import { describeOnEveryLedger, useFileLedger, type LedgerTarget } from '../../support/fileLedger.ts';
import {
  appendCounterEvents,
  countApplications,
  counterProjection,
  counterScope,
  createCounterTables,
  type CounterScope,
} from '../../support/counterProjection.ts';

// A second projection with its own table, over the scope's other event type.
const unrelatedCount = (scope: CounterScope): Projection => ({
  name: `${scope.name}_unrelated`,
  version: 1,
  eventTypes: [scope.unrelated],
  tables: [`${scope.name}_unrelated`],
  async apply(_event, tx) {
    await tx.query(`INSERT INTO ${scope.name}_unrelated (id, seen) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET seen = ${scope.name}_unrelated.seen + 1`);
  },
});

const suite = (target: LedgerTarget) => {
  const ledger = useFileLedger(target);

  it('runs every projection, reports them caught up together, and stops them all on close', async () => {
    const scope = counterScope();
    await createCounterTables(ledger.db, scope);
    await ledger.db.exec(`CREATE TABLE ${scope.name}_unrelated (id int PRIMARY KEY, seen bigint NOT NULL)`);
    const counted = await appendCounterEvents(ledger.store, scope, 400);
    const projections = await startProjections(ledger.db, ledger.store, [counterProjection(scope), unrelatedCount(scope)]);
    try {
      await projections.waitForCaughtUp();
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: counted, distinctEvents: counted });
      const { rows } = await ledger.db.query<{ seen: bigint }>(`SELECT seen FROM ${scope.name}_unrelated`);
      expect(rows[0]?.seen).toBe(BigInt(400 - counted));
      const lags = await projections.lag();
      expect(lags.map((lag) => [lag.projection, lag.pending, lag.secondsBehind])).toEqual([
        [scope.name, false, 0],
        [`${scope.name}_unrelated`, false, 0],
      ]);
    } finally {
      await projections.close();
    }
    await expect(projections.runners[0]!.waitForCaughtUp()).rejects.toThrow(/stopped/);
  });
};

describeOnEveryLedger('projection set', suite);

describe('projection set', () => {
  it('refuses two projections of one name before touching storage', async () => {
    const untouched = {} as Db & EventStore;
    const scope = counterScope('twice');
    await expect(startProjections(untouched, untouched, [counterProjection(scope), counterProjection(scope)])).rejects.toThrow(
      /two projections are named twice/,
    );
  });
});
