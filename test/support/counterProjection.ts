// A small projection for runner tests and benchmarks: per-counter totals, plus one row per application,
// so a test can prove each event took effect exactly once (no unique key: a double apply shows up as a
// duplicate row instead of an error that would hide it).
import type { Queryable } from '../../src/db/db.ts';
import type { EventStore, NewEvent } from '../../src/ledger/eventStore.ts';
import type { Projection } from '../../src/ledger/projection.ts';

export const COUNTER_INCREMENTED = 'CounterIncremented';
export const UNRELATED = 'SomethingElseHappened';

export const COUNTER_TABLES_SQL = `
  CREATE TABLE IF NOT EXISTS test_counters (counter text PRIMARY KEY, total bigint NOT NULL, events bigint NOT NULL);
  CREATE TABLE IF NOT EXISTS test_counter_applications (event_id uuid NOT NULL, run text NOT NULL);`;

export interface CounterProjectionOptions {
  name?: string;
  version?: number;
  /** Multiplies each increment: a changed meaning for version-bump tests. */
  factor?: number;
  /** Recorded with each application: which process or runner applied it. */
  run?: string;
  onCommit?: (events: number) => void;
}

export function counterProjection({ name = 'counter', version = 1, factor = 1, run = 'test', onCommit }: CounterProjectionOptions = {}): Projection {
  return {
    name,
    version,
    eventTypes: [COUNTER_INCREMENTED],
    tables: ['test_counters', 'test_counter_applications'],
    async apply(event, tx) {
      const { counter, by } = event.data as { counter: string; by: number };
      await tx.query(
        `INSERT INTO test_counters (counter, total, events) VALUES ($1, $2, 1)
         ON CONFLICT (counter) DO UPDATE SET total = test_counters.total + EXCLUDED.total, events = test_counters.events + 1`,
        [counter, by * factor],
      );
      await tx.query('INSERT INTO test_counter_applications (event_id, run) VALUES ($1, $2)', [event.id, run]);
    },
    ...(onCommit ? { afterCommit: (events) => onCommit(events.length) } : {}),
  };
}

/** Appends `count` events, every `unrelatedEvery`-th of another type, in batches over ten streams. */
export async function appendCounterEvents(store: EventStore, count: number, { batchSize = 100, unrelatedEvery = 4, offset = 0 } = {}) {
  let counterEvents = 0;
  for (let start = 0; start < count; start += batchSize) {
    const events: NewEvent[] = [];
    for (let i = start; i < Math.min(count, start + batchSize); i++) {
      const n = offset + i;
      if (n % unrelatedEvery === unrelatedEvery - 1) {
        events.push({ type: UNRELATED, data: { n } });
      } else {
        events.push({ type: COUNTER_INCREMENTED, data: { counter: `c${n % 7}`, by: (n % 5) + 1 } });
        counterEvents++;
      }
    }
    await store.append(`counter-${(offset + start) % 10}`, events);
  }
  return counterEvents;
}

export async function readCounters(db: Queryable) {
  const { rows } = await db.query<{ counter: string; total: bigint; events: bigint }>(
    'SELECT counter, total, events FROM test_counters ORDER BY counter',
  );
  return rows;
}

export async function countApplications(db: Queryable) {
  const { rows } = await db.query<{ applications: bigint; distinct_events: bigint }>(
    'SELECT count(*) AS applications, count(DISTINCT event_id) AS distinct_events FROM test_counter_applications',
  );
  return { applications: Number(rows[0]!.applications), distinctEvents: Number(rows[0]!.distinct_events) };
}
