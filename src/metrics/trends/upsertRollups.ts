// Adds per-minute increments to a family's trend tables in ONE statement (one round trip per page of events).
//
// Minutes are written as increments arrive; hours and days are rolled up from minutes once those minutes
// are past. Writing all three per increment cost three upserts where one will do: at 50,000 active tenants
// the trend projection fell behind on the hour and day rows alone. The family's mark (`<family>_rolled`)
// says how far the minutes have been rolled up: every minute before it is in the hour and day tables, and
// reads add the minutes from it on (bucketRows), so an hour or a day reads whole at any moment.
//
// Each statement may move the mark to `through` (a minute behind the newest increment it carries, so a
// minute is rolled up once the page is a minute past its end). It then adds to the hours and days both the
// stored minutes in [mark, through), as its snapshot sees them, and its own increments before `through`,
// which that snapshot does not hold yet; so every minute is counted into its hour and day exactly once. An
// increment for a minute already rolled up (a recorder that was late by minutes) goes to all three tables.
// Only projections run this, each page in its checkpointed transaction, so two statements never roll up
// the same minutes: a second runner's page waits on the first's row locks and is then refused by the
// checkpoint, and rolled back.
import { setImmediate as yieldTurn } from 'node:timers/promises';
import type { Queryable } from '../../db/db.ts';
import { prepared } from '../../db/preparedStatements.ts';
import { BUCKET_SECONDS, bucketTable, type TrendBucket } from './buckets.ts';
import { rolledTable, rolledThrough, type RollupFamily } from './rollupFamily.ts';

/** One increment: key values by column, the minute's unix second, whole counts by column. */
export interface RollupIncrement {
  keys: Record<string, string>;
  minuteStart: number;
  counts: Record<string, number>;
}

/** A minute is rolled up once increments a minute past its end arrive (late ones still count, at more cost). */
const ROLL_UP_AFTER_SECONDS = 60;

/** Merged rows serialized per turn of the event loop (a few ms each). */
const ROWS_PER_SLICE = 10_000;

const statements = new Map<RollupFamily, string>();

/**
 * Increments of one page, summed per keys and minute, in first-seen order. Sums commute, so the tables end
 * the same as after upserting each increment; but each row is then written once per page instead of once
 * per increment (a page of 500 summaries of the same 10,000 keys used to update each row 500 times in one
 * transaction, each update slower than the last). The statement's parameter is the rows as arrays
 * (`[key values..., minute start, counts...]`), not objects: a quarter of the JSON to make and to parse.
 */
export class RollupRows {
  private readonly merged = new Map<string, (string | number)[]>();
  private newest = -Infinity;

  constructor(readonly family: RollupFamily) {}

  /** Rows (keys and minute) held so far. */
  get size(): number {
    return this.merged.size;
  }

  /** The increments, merged. */
  static of(family: RollupFamily, increments: readonly RollupIncrement[]): RollupRows {
    const rows = new RollupRows(family);
    for (const increment of increments) rows.add(increment);
    return rows;
  }

  /**
   * Adds counts to a minute of keys: key values in `family.keys` order, counts in `family.counts` order.
   * Both are copied, so a caller may pass the same arrays every time (nothing is made per increment but
   * the row of a new key and minute).
   */
  addValues(keys: readonly string[], minuteStart: number, counts: readonly number[]): void {
    let id = String(minuteStart);
    // A separator no key value holds (tenant IDs, dimensions and allowances are plain text; \u0000 cannot be stored).
    for (let i = 0; i < keys.length; i++) id += `\u0000${keys[i]}`;
    if (minuteStart > this.newest) this.newest = minuteStart;
    const row = this.merged.get(id);
    if (row === undefined) {
      this.merged.set(id, [...keys, minuteStart, ...counts]);
      return;
    }
    const first = keys.length + 1;
    for (let i = 0; i < counts.length; i++) (row[first + i] as number) += counts[i]!;
  }

  add(increment: RollupIncrement): void {
    this.addValues(
      this.family.keys.map((key) => increment.keys[key] ?? ''),
      increment.minuteStart,
      this.family.counts.map((count) => increment.counts[count] ?? 0),
    );
  }

  rows(): (string | number)[][] {
    return [...this.merged.values()];
  }

  /** Writes the rows to the family's minutes, and rolls up the minutes a minute behind the newest. */
  async upsert(tx: Queryable): Promise<void> {
    if (this.merged.size === 0) return;
    // Serialized a slice at a time with turns of the event loop between: 50,000 rows in one go held the
    // loop for tens of milliseconds, and the Governor shares it.
    const rows = this.rows();
    let json = '[';
    for (let start = 0; start < rows.length; start += ROWS_PER_SLICE) {
      if (start > 0) {
        await yieldTurn();
        json += ',';
      }
      json += JSON.stringify(rows.slice(start, start + ROWS_PER_SLICE)).slice(1, -1);
    }
    await tx.query(statementFor(this.family), [`${json}]`, this.newest - ROLL_UP_AFTER_SECONDS]);
  }
}

/** The increments merged per keys and minute (RollupRows), as the statement's rows. */
export function mergeIncrements(family: RollupFamily, increments: readonly RollupIncrement[]): (string | number)[][] {
  return RollupRows.of(family, increments).rows();
}

/** Adds the increments (merged first: RollupRows) to the family's minutes, and rolls up past minutes. */
export async function upsertRollups(tx: Queryable, family: RollupFamily, increments: readonly RollupIncrement[]): Promise<void> {
  await RollupRows.of(family, increments).upsert(tx);
}

function statementFor(family: RollupFamily): string {
  let sql = statements.get(family);
  if (!sql) {
    // Named: planning this many-CTE statement cost 40-80 ms a page, more than a small page's writes.
    sql = prepared(buildStatement(family));
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
    mark AS (SELECT ${rolledThrough(family)} AS rolled_through),
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
      WHERE bucket_start >= to_timestamp(${rolledThrough(family)}))`;
}
