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

export async function upsertRollups(tx: Queryable, family: RollupFamily, increments: readonly RollupIncrement[]): Promise<void> {
  if (increments.length === 0) return;
  const rows = increments.map((increment) => {
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

