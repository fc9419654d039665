// Adds per-minute increments to a family's minute, hour and day tables in ONE statement (one round trip
// per event), so the roll-ups can never disagree with the minutes they were built from.
import type { Queryable } from '../../db/db.ts';
import { BUCKET_SECONDS, bucketTable, type TrendBucket } from './buckets.ts';
import type { RollupFamily } from './rollupFamily.ts';

/** One increment: key values by column, the minute's unix second, whole counts by column. */
export interface RollupIncrement {
  keys: Record<string, string>;
  minuteStart: number;
  counts: Record<string, number>;
}

const statements = new Map<RollupFamily, string>();

/**
 * Sums increments of the same keys and minute into one, in first-seen order. Sums commute, so the tables
 * end the same as after upserting each; but each row is then written once per call instead of once per
 * increment: a page of 500 summaries of the same 10,000 keys used to update each row 500 times in one
 * transaction, each update slower than the last (every one leaves a dead version to step over).
 */
export function mergeIncrements(family: RollupFamily, increments: readonly RollupIncrement[]): RollupIncrement[] {
  const merged = new Map<string, RollupIncrement>();
  for (const increment of increments) {
    let id = String(increment.minuteStart);
    // A separator no key value holds (tenant IDs, dimensions and allowances are plain text; \u0000 cannot be stored).
    for (const key of family.keys) id += `\u0000${increment.keys[key] ?? ''}`;
    const existing = merged.get(id);
    if (!existing) {
      merged.set(id, { keys: increment.keys, minuteStart: increment.minuteStart, counts: { ...increment.counts } });
      continue;
    }
    for (const count of family.counts) existing.counts[count] = (existing.counts[count] ?? 0) + (increment.counts[count] ?? 0);
  }
  return [...merged.values()];
}

/** Adds the increments (merged first: mergeIncrements) to the family's minute, hour and day tables in one statement. */
export async function upsertRollups(tx: Queryable, family: RollupFamily, increments: readonly RollupIncrement[]): Promise<void> {
  if (increments.length === 0) return;
  const rows = mergeIncrements(family, increments).map((increment) => {
    const row: Record<string, string | number> = { minute_start: increment.minuteStart };
    for (const key of family.keys) row[key] = increment.keys[key] ?? '';
    for (const count of family.counts) row[count] = increment.counts[count] ?? 0;
    return row;
  });
  await tx.query(statementFor(family), [JSON.stringify(rows)]);
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
  const columns = [...family.keys.map((key) => `${key} text`), 'minute_start bigint', ...family.counts.map((count) => `${count} bigint`)];
  const upsert = (bucket: TrendBucket) => {
    const table = bucketTable(family.table, bucket);
    // From unix seconds (UTC), not date_trunc: that follows the session's TimeZone and could put a day
    // boundary somewhere else on another connection.
    const start = `(minute_start - minute_start % ${BUCKET_SECONDS[bucket]})`;
    return `INSERT INTO ${table} (${keys}, bucket_start, ${family.counts.join(', ')})
      SELECT ${keys}, to_timestamp(${start}), ${family.counts.map((count) => `sum(${count})`).join(', ')}
      FROM increments GROUP BY ${keys}, ${start}
      ON CONFLICT (${family.primaryKey.join(', ')}) DO UPDATE SET
        ${family.counts.map((count) => `${count} = ${table}.${count} + EXCLUDED.${count}`).join(', ')}`;
  };
  return `WITH increments AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(${columns.join(', ')})),
    minutes AS (${upsert('MINUTE')}),
    hours AS (${upsert('HOUR')})
    ${upsert('DAY')}`;
}

