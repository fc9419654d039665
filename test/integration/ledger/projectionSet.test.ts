import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import type { Projection } from '../../../src/ledger/projection.ts';
import { startProjections } from '../../../src/ledger/projectionSet.ts';
import { storageTargets, type TestDb } from '../../support/databases.ts';
import { COUNTER_TABLES_SQL, UNRELATED, appendCounterEvents, countApplications, counterProjection } from '../../support/counterProjection.ts';

// A second projection with its own table, over the other event type.
const unrelatedCount: Projection = {
  name: 'unrelated-count',
  version: 1,
  eventTypes: [UNRELATED],
  tables: ['test_unrelated_count'],
  async apply(_event, tx) {
    await tx.query('INSERT INTO test_unrelated_count (id, seen) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET seen = test_unrelated_count.seen + 1');
  },
};

describe.each(storageTargets)('projection set on $name', (target) => {
  let testDb: TestDb;
  let db: Db;
  let store: EventStore;

  beforeEach(async () => {
    testDb = await target.open();
    db = testDb.db;
    await db.exec(`${COUNTER_TABLES_SQL} CREATE TABLE test_unrelated_count (id int PRIMARY KEY, seen bigint NOT NULL);`);
    store = createPostgresEventStore(db);
  });

  afterEach(async () => {
    await store.close();
    await testDb.dispose();
  });

  it('runs every projection, reports them caught up together, and stops them all on close', async () => {
    const counted = await appendCounterEvents(store, 400);
    const projections = await startProjections(db, store, [counterProjection(), unrelatedCount]);
    try {
      await projections.waitForCaughtUp();
      expect(await countApplications(db)).toEqual({ applications: counted, distinctEvents: counted });
      const { rows } = await db.query<{ seen: bigint }>('SELECT seen FROM test_unrelated_count');
      expect(rows[0]?.seen).toBe(BigInt(400 - counted));
      const lags = await projections.lag();
      expect(lags.map((lag) => [lag.projection, lag.eventsBehind])).toEqual([
        ['counter', 0],
        ['unrelated-count', 0],
      ]);
    } finally {
      await projections.close();
    }
    await expect(projections.runners[0]!.waitForCaughtUp()).rejects.toThrow(/stopped/);
  });
});

describe('projection set', () => {
  it('refuses two projections of one name before touching storage', async () => {
    const untouched = {} as Db & EventStore;
    await expect(startProjections(untouched, untouched, [counterProjection(), counterProjection()])).rejects.toThrow(
      /two projections are named counter/,
    );
  });
});
