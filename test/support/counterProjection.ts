// A small projection for runner tests and benchmarks: per-counter totals, plus one row per application,
// so a test can prove each event took effect exactly once (no unique key: a double apply shows up as a
// duplicate row instead of an error that would hide it); `last_event` depends on the order of application,
// so equal read models mean the same events in the same order. Everything is named after a scope (projection,
// tables, event types), so tests can share one database and one ledger without seeing each other's events.
import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../src/db/db.ts';
import type { EventStore, NewEvent } from '../../src/ledger/eventStore.ts';
import type { Projection } from '../../src/ledger/projection.ts';

export interface CounterScope {
  /** The projection's name and the prefix of its tables. */
  name: string;
  counters: string;
  applications: string;
  incremented: string;
  unrelated: string;
}

export function counterScope(name = `counter_${randomBytes(4).toString('hex')}`): CounterScope {
  return {
    name,
    counters: `${name}_counters`,
    applications: `${name}_applications`,
    incremented: `${name}.CounterIncremented`,
    unrelated: `${name}.SomethingElseHappened`,
  };
}

export async function createCounterTables(db: Queryable, scope: CounterScope): Promise<void> {
  await db.exec(`
    CREATE TABLE IF NOT EXISTS ${scope.counters} (counter text PRIMARY KEY, total bigint NOT NULL, events bigint NOT NULL, last_event uuid NOT NULL);
    CREATE TABLE IF NOT EXISTS ${scope.applications} (event_id uuid NOT NULL, run text NOT NULL);`);
}

export interface CounterProjectionOptions {
  version?: number;
  /** Multiplies each increment: a changed meaning for version-bump tests. */
  factor?: number;
  /** Recorded with each application: which process or runner applied it. */
  run?: string;
  onCommit?: (events: number) => void;
}

export function counterProjection(scope: CounterScope, { version = 1, factor = 1, run = 'test', onCommit }: CounterProjectionOptions = {}): Projection {
  return {
    name: scope.name,
    version,
    eventTypes: [scope.incremented],
    tables: [scope.counters, scope.applications],
    async apply(event, tx) {
      const { counter, by } = event.data as { counter: string; by: number };
      await tx.query(
        `INSERT INTO ${scope.counters} (counter, total, events, last_event) VALUES ($1, $2, 1, $3)
         ON CONFLICT (counter) DO UPDATE
           SET total = ${scope.counters}.total + EXCLUDED.total, events = ${scope.counters}.events + 1, last_event = EXCLUDED.last_event`,
        [counter, by * factor, event.id],
      );
      await tx.query(`INSERT INTO ${scope.applications} (event_id, run) VALUES ($1, $2)`, [event.id, run]);
    },
    ...(onCommit ? { afterCommit: (events) => onCommit(events.length) } : {}),
  };
}

/**
 * Appends `count` events, every `unrelatedEvery`-th of another type (so the last of a round count is
 * unrelated), in batches over ten streams. Returns how many are counter increments.
 */
export async function appendCounterEvents(
  store: EventStore,
  scope: CounterScope,
  count: number,
  { batchSize = 100, unrelatedEvery = 4, offset = 0 } = {},
): Promise<number> {
  let counterEvents = 0;
  for (let start = 0; start < count; start += batchSize) {
    const events: NewEvent[] = [];
    for (let i = start; i < Math.min(count, start + batchSize); i++) {
      const n = offset + i;
      if (n % unrelatedEvery === unrelatedEvery - 1) {
        events.push({ type: scope.unrelated, data: { n } });
      } else {
        events.push({ type: scope.incremented, data: { counter: `c${n % 7}`, by: (n % 5) + 1 } });
        counterEvents++;
      }
    }
    await store.append(`${scope.name}-${(offset + start) % 10}`, events);
  }
  return counterEvents;
}

export async function readCounters(db: Queryable, scope: CounterScope) {
  const { rows } = await db.query<{ counter: string; total: bigint; events: bigint }>(
    `SELECT counter, total, events FROM ${scope.counters} ORDER BY counter`,
  );
  return rows;
}

export async function countApplications(db: Queryable, scope: CounterScope) {
  const { rows } = await db.query<{ applications: bigint; distinct_events: bigint }>(
    `SELECT count(*) AS applications, count(DISTINCT event_id) AS distinct_events FROM ${scope.applications}`,
  );
  return { applications: Number(rows[0]!.applications), distinctEvents: Number(rows[0]!.distinct_events) };
}
