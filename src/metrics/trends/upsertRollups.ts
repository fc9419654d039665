// Adds per-minute increments to a family's trend tables in ONE statement (one round trip per page of events).
//
// Minutes are written as increments arrive; hours and days are rolled up from minutes once those minutes
// are past. Writing all three per increment cost three upserts where one will do: at 50,000 active tenants
// the trend projection fell behind on the hour and day rows alone. The family's mark (`<family>_rolled`)
// says how far the minutes have been rolled up: every minute before it is in the hour and day tables, and
// reads add the minutes from it on (bucketRows), so an hour or a day reads whole at any moment.
//
// Each statement may move the mark to `rollUpTo` (a minute behind the newest increment it carries, so a
// minute is rolled up once the page is a minute past its end). It then adds to the hours and days both the
// stored minutes in [mark, rollUpTo), as its snapshot sees them, and its own increments before rollUpTo,
// which that snapshot does not hold yet; so every minute is counted into its hour and day exactly once. An
// increment for a minute already rolled up (a recorder that was late by minutes) goes to all three tables.
// Only projections run this, each page in its checkpointed transaction, so two statements never roll up
// the same minutes: a second runner's page waits on the first's row locks and is then refused by the
// checkpoint, and rolled back.
import type { Queryable } from '../../db/db.ts';
import { BUCKET_SECONDS, bucketTable, type TrendBucket } from './buckets.ts';
import { rolledTable, type RollupFamily } from './rollupFamily.ts';

/** One increment: key values by column, the minute's unix second, whole counts by column. */
export interface RollupIncrement {
  keys: Record<string, string>;
  minuteStart: number;
  counts: Record<string, number>;
}

/** A minute is rolled up once increments a minute past its end arrive (late ones still count, at more cost). */
const ROLL_UP_AFTER_SECONDS = 60;

const statements = new Map<RollupFamily, string>();

/**
 * Sums increments of the same keys and minute into one row, in first-seen order, as the statement's
 * parameter: `[key values..., minute start, counts...]`. Sums commute, so the tables end the same as after
 * upserting each; but each row is then written once per call instead of once per increment (a page of
 * 500 summaries of the same 10,000 keys used to update each row 500 times in one transaction, each update
 * slower than the last). Rows are arrays, not objects: a quarter of the JSON to make and to parse.
 */
export function mergeIncrements(family: RollupFamily, increments: readonly RollupIncrement[]): (string | number)[][] {
  const merged = new Map<string, (string | number)[]>();
  const keyCount = family.keys.length;
  for (const increment of increments) {
    let id = String(increment.minuteStart);
    // A separator no key value holds (tenant IDs, dimensions and allowances are plain text; \u0000 cannot be stored).
    for (const key of family.keys) id += `\u0000${increment.keys[key] ?? ''}`;
    const existing = merged.get(id);
    if (!existing) {
      const row: (string | number)[] = [];
      for (const key of family.keys) row.push(increment.keys[key] ?? '');
      row.push(increment.minuteStart);
      for (const count of family.counts) row.push(increment.counts[count] ?? 0);
      merged.set(id, row);
      continue;
    }
    family.counts.forEach((count, index) => {
      (existing[keyCount + 1 + index] as number) += increment.counts[count] ?? 0;
    });
  }
  return [...merged.values()];
}

/** Adds the increments (merged first: mergeIncrements) to the family's minutes, and rolls up past minutes. */
export async function upsertRollups(tx: Queryable, family: RollupFamily, increments: readonly RollupIncrement[]): Promise<void> {
  if (increments.length === 0) return;
  let newest = -Infinity;
  for (const increment of increments) if (increment.minuteStart > newest) newest = increment.minuteStart;
  await tx.query(statementFor(family), [JSON.stringify(mergeIncrements(family, increments)), newest - ROLL_UP_AFTER_SECONDS]);
}

/**
 * Rolls up every minute before `throughSecond` (a minute boundary) into hours and days, with no increment:
 * what the projection does as pages arrive, for a caller that needs the hour and day tables whole up to a
 * point (comparing a rebuilt read model with the one built as events arrived). Run it only where the
 * projection is not applying pages at the same time.
 */
export async function rollUpThrough(q: Queryable, family: RollupFamily, throughSecond: number): Promise<void> {
  await q.query(statementFor(family), ['[]', throughSecond]);
}

function statementFor(family: RollupFamily): string {
  let sql = statements.get(family);
  if (!sql) {
    sql = buildStatement(family);
    statements.set(family, sql);
  }
  return sql;
}

function buildStatement(family: RollupFamily): string {
  const keys = family.keys.join(', ');
  const counts = family.counts.join(', ');
  const minuteTable = bucketTable(family.table, 'MINUTE');
  const rolled = rolledTable(family);
  const fields = [
    ...family.keys.map((key, index) => `r->>${index} AS ${key}`),
    `(r->>${family.keys.length})::bigint AS minute_start`,
    ...family.counts.map((count, index) => `(r->>${family.keys.length + 1 + index})::bigint AS ${count}`),
  ];
  const upsert = (bucket: TrendBucket, source: string) => {
    const table = bucketTable(family.table, bucket);
    // From unix seconds (UTC), not date_trunc: that follows the session's TimeZone and could put a day
    // boundary somewhere else on another connection.
    const start = bucket === 'MINUTE' ? 'minute_start' : `(minute_start - minute_start % ${BUCKET_SECONDS[bucket]})`;
    return `INSERT INTO ${table} (${keys}, bucket_start, ${counts})
      SELECT ${keys}, to_timestamp(${start}), ${family.counts.map((count) => `sum(${count})`).join(', ')}
      FROM ${source} GROUP BY ${keys}, ${start}
      ON CONFLICT (${family.primaryKey.join(', ')}) DO UPDATE SET
        ${family.counts.map((count) => `${count} = ${table}.${count} + EXCLUDED.${count}`).join(', ')}`;
  };
  return `WITH increments AS (SELECT ${fields.join(', ')} FROM jsonb_array_elements($1::jsonb) AS r),
    mark AS (SELECT coalesce((SELECT rolled_through FROM ${rolled}), 0) AS rolled_through),
    target AS (SELECT mark.rolled_through AS since, greatest(mark.rolled_through, $2::bigint) AS through FROM mark),
    minutes AS (${upsert('MINUTE', 'increments')}),
    to_roll_up AS (
      SELECT ${keys}, minute_start, ${counts} FROM increments, target WHERE minute_start < target.through
      UNION ALL
      SELECT ${keys}, extract(epoch FROM bucket_start)::bigint AS minute_start, ${counts}
        FROM ${minuteTable}, target
        WHERE target.through > target.since
          AND bucket_start >= to_timestamp(target.since) AND bucket_start < to_timestamp(target.through)
    ),
    hours AS (${upsert('HOUR', 'to_roll_up')}),
    days AS (${upsert('DAY', 'to_roll_up')})
    INSERT INTO ${rolled} (rolled_through) SELECT through FROM target WHERE through > since
      ON CONFLICT (singleton) DO UPDATE SET rolled_through = EXCLUDED.rolled_through`;
}

/**
 * A family's rows at one bucket size, as a relation to read FROM: the bucket's table, and for hours and
 * days also the minutes not yet rolled up, each counted in the hour or day it falls in. Callers filter and
 * aggregate it as they did the table alone (a filter on keys or bucket_start reaches both parts).
 */
export function bucketRows(family: RollupFamily, bucket: TrendBucket): string {
  const table = bucketTable(family.table, bucket);
  if (bucket === 'MINUTE') return table;
  const size = BUCKET_SECONDS[bucket];
  const keys = family.keys.join(', ');
  const counts = family.counts.join(', ');
  return `(SELECT ${keys}, bucket_start, ${counts} FROM ${table}
    UNION ALL
    SELECT ${keys}, to_timestamp(floor(extract(epoch FROM bucket_start) / ${size}) * ${size}) AS bucket_start, ${counts}
      FROM ${bucketTable(family.table, 'MINUTE')}
      WHERE bucket_start >= to_timestamp((SELECT coalesce(max(rolled_through), 0) FROM ${rolledTable(family)})))`;
}
