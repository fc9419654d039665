// Adds per-minute increments to a family's trend tables (one statement per page of events), and rolls minutes up
// into hours and days in a transaction of its own once they are past (rollUpMinutes).
//
// Minutes are written as increments arrive; hours and days are rolled up from minutes once those minutes are
// past. Writing all three per increment cost three upserts where one will do: at 50,000 active tenants the trend
// projection fell behind on the hour and day rows alone. The family's mark (`<family>_rolled`) says how far the
// minutes have been rolled up: every minute before it is in the hour and day tables, and reads add the minutes
// from it on (bucketRows), so an hour or a day reads whole at any moment.
//
// The roll-up is not part of the page. It used to be, in the page's statement; but rolling a minute of 50,000
// tenants up updates 50,000 hour rows and 50,000 day rows, and that page took 2.0-2.4 s where others took 0.3-0.7,
// while the live events waited (the trend lag passed 5 s whenever something else slowed it further). Now the
// runner rolls up after the page has committed (Projection.afterPages), and live pages go on while it runs: a
// roll-up of a minute took 1.0-1.4 s on an idle 2-core host, and pages used to wait for it whole, once a minute.
//
// Exactly once. A family has two marks: `rolled` (every minute before it is in the hours and days) and `rolling`
// (the minute the roll-up under way, if any, stops at; never before `rolled`). A roll-up runs in two transactions:
//   1. Under the family's lock (ROLL_UP_LOCK), exclusive, it sets `rolling` to a minute before the newest stored
//      (two, live, early in the newest minute: ROLL_UP_INTO_MINUTE_SECONDS).
//      A page holds the same lock shared from its first statement to its commit, so this waits for the page under
//      way and holds the next one back only for itself (milliseconds).
//   2. Under the rolling lock (ROLLING_LOCK), exclusive, it adds the stored minutes in [rolled, rolling) to the
//      hours and days and moves `rolled` to `rolling`.
// A page reads `rolling` after taking the family's lock shared, so it stays put until the page commits. A page
// whose minutes are all from `rolling` on (live traffic: the newest minute or two) writes them to the minutes only
// and does not wait for step 2, which never reads them. A page with a minute before `rolling` (a recorder late by
// minutes) takes the rolling lock too, so it runs before or after a step 2, never beside one: a minute before
// `rolled` it adds to all three tables; a minute in [rolled, rolling), to the minutes only, and the step 2 that
// follows rolls it up. In READ COMMITTED each statement after a lock sees everything committed before it was
// granted. Two runners (replicas) wait on the same locks; the second finds the marks moved.
import { setImmediate as yieldTurn } from 'node:timers/promises';
import type { Db, Queryable } from '../../db/db.ts';
import { prepared } from '../../db/preparedStatements.ts';
import { BUCKET_SECONDS, bucketTable, type TrendBucket } from './buckets.ts';
import { openRows } from './openRows.ts';
import { openTable, rolledTable, rolledThrough, type RollupFamily } from './rollupFamily.ts';

/** One increment: key values by column, the minute's unix second, whole counts by column. */
export interface RollupIncrement {
  keys: Record<string, string>;
  minuteStart: number;
  counts: Record<string, number>;
}

/** A minute is rolled up once a minute past the newest one stored (late increments still count, at more cost). */
const ROLL_UP_AFTER_SECONDS = 60;

/**
 * Live, the newest minute stored is the clock's, and a roll-up waits until it is this far in: at its start the
 * pages write every active tenant's new minute row (a page across the boundary held twice the rows), and a
 * roll-up then (100,000 row updates a minute at 50,000 active tenants) took PostgreSQL's time from them when
 * it had the least to spare; the trend lag peaked at 7-8 s on a 2-core host. Until then the minute before the
 * newest waits one more roll-up. Catching up (the newest minute stored is older than this), nothing waits.
 */
const ROLL_UP_INTO_MINUTE_SECONDS = 30;

/**
 * The advisory lock a family's pages and roll-ups take (the first of its two keys; the second is the family's
 * table in the connection's schema, so services sharing a database in schemas of their own never wait on each
 * other). Another constant than the ledger's stream locks (STREAM_LOCK_CLASS).
 */
const ROLL_UP_LOCK_CLASS = 7_246_003;

/** The rolling lock's class (step 2 of a roll-up, and pages with minutes before the `rolling` mark). */
const ROLLING_LOCK_CLASS = 7_246_004;

/** Rows of one first key (a tenant) looked through one by one before the rest are found by their whole id. */
const SCANNED_ROWS = 16;

/** Whether a row holds these keys (the first one already matched) and this minute. */
function sameRow(row: readonly (string | number)[], keys: readonly string[], minuteStart: number): boolean {
  if (row[keys.length] !== minuteStart) return false;
  for (let i = 1; i < keys.length; i++) if (row[i] !== keys[i]) return false;
  return true;
}

/**
 * A row's keys and minute as one string (a separator no key value holds: \u0000 cannot be stored): the first
 * `keyCount` of `values` (the caller's keys, or a held row's) are the keys.
 */
function rowId(values: readonly (string | number)[], keyCount: number, minuteStart: number): string {
  let id = String(minuteStart);
  for (let i = 0; i < keyCount; i++) id += `\u0000${values[i]}`;
  return id;
}

/** Merged rows serialized per turn of the event loop (a few ms each). */
const ROWS_PER_SLICE = 10_000;

/**
 * The page statement's memory for sorting, hashing and holding its increments (work_mem), per row it carries, in
 * kB, and its bounds. At PostgreSQL's default of 4 MB a page of 50,000 rows wrote 16-19 MB of temporary files
 * (the increments, read twice, and the hour and day roll-up's hash); with this, pages took 340-670 ms instead of
 * 360-1,000 at 50,000 active tenants. Set for the page's transaction only (set_config's is_local).
 */
const WORK_MEM_KB_PER_ROW = 1;
const WORK_MEM_KB = { min: 4 * 1024, max: 128 * 1024 };

/** The roll-up's work_mem: it groups a minute of rows (50,000 at 50,000 active tenants) per hour and per day. */
const ROLL_UP_WORK_MEM_KB = 64 * 1024;

interface FamilyStatements {
  /** $1: work_mem. The family's lock, shared: a page's first statement. */
  pageLock: string;
  /** The `rolling` mark (a page's second statement, after the lock). */
  rolling: string;
  /** The rolling lock: a page with a minute before `rolling`. */
  rollingLock: string;
  /** $1: rows (RollupRows). */
  page: string;
  /** Step 1 of a roll-up: the family's lock, exclusive. */
  startRollUpLock: string;
  /** $1: the clock, unix seconds. Step 1: `rolling` set to a minute (or two) before the newest stored. */
  startRollUp: string;
  /** $1: work_mem. Step 2: the rolling lock. */
  rollUpLock: string;
  /** Step 2: the minutes in [rolled, rolling) into the hours and days; answers the seconds and `rolling`. */
  rollUp: string;
  /** $1: step 2's `rolling`, the new `rolled`. */
  rolled: string;
}

const statements = new Map<RollupFamily, FamilyStatements>();

/**
 * Increments of one page, summed per keys and minute, in first-seen order. Sums commute, so the tables end
 * the same as after upserting each increment; but each row is then written once per page instead of once
 * per increment (a page of 500 summaries of the same 10,000 keys used to update each row 500 times in one
 * transaction, each update slower than the last). The statement's parameter is the rows as arrays
 * (`[key values..., minute start, counts...]`), not objects: a quarter of the JSON to make and to parse.
 */
export class RollupRows {
  // Rows by their first key's value (the tenant), each list scanned for the other keys and the minute; past
  // SCANNED_ROWS rows of one first key, the others are found by an id made of all of them. Making that id for
  // every increment (a number and three strings joined, then hashed) was two thirds of a catch-up's Node CPU at
  // 50,000 active tenants; a tenant ID expanded from a summary reference is the same string every time
  // (summaryRefs.ts), whose hash V8 keeps.
  private byFirstKey = new Map<string, (string | number)[][]>();
  private byId = new Map<string, (string | number)[]>();
  private all: (string | number)[][] = [];
  private oldest = Infinity;

  constructor(readonly family: RollupFamily) {}

  /** Rows (keys and minute) held so far. */
  get size(): number {
    return this.all.length;
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
    const scanned = this.byFirstKey.get(keys[0]!);
    let row: (string | number)[] | undefined;
    if (scanned !== undefined) {
      for (let r = 0; r < scanned.length && row === undefined; r++) if (sameRow(scanned[r]!, keys, minuteStart)) row = scanned[r];
      if (row === undefined && scanned.length >= SCANNED_ROWS) row = this.byId.get(rowId(keys, keys.length, minuteStart));
    }
    if (row === undefined) {
      this.hold([...keys, minuteStart, ...counts], scanned);
      return;
    }
    const first = keys.length + 1;
    for (let i = 0; i < counts.length; i++) (row[first + i] as number) += counts[i]!;
  }

  /** Holds a row of a keys and minute not held yet (`scanned`: its first key's list, if it has one). */
  private hold(row: (string | number)[], scanned: (string | number)[][] | undefined): void {
    const keys = this.family.keys.length;
    const minuteStart = row[keys] as number;
    if (minuteStart < this.oldest) this.oldest = minuteStart;
    this.all.push(row);
    if (scanned === undefined) this.byFirstKey.set(row[0] as string, [row]);
    else if (scanned.length < SCANNED_ROWS) scanned.push(row);
    else this.byId.set(rowId(row, keys, minuteStart), row);
  }

  /** Adds another's rows (of the same family) to these. */
  absorb(other: RollupRows): void {
    const at = this.family.keys.length;
    for (const row of other.all) this.addValues(row.slice(0, at) as string[], row[at] as number, row.slice(at + 1) as number[]);
  }

  add(increment: RollupIncrement): void {
    this.addValues(
      this.family.keys.map((key) => increment.keys[key] ?? ''),
      increment.minuteStart,
      this.family.counts.map((count) => increment.counts[count] ?? 0),
    );
  }

  /** The rows, in the order their keys and minute were first added. */
  rows(): readonly (string | number)[][] {
    return this.all;
  }

  /**
   * Writes the rows to the family's minutes; those of minutes already rolled up also to its hours and days. The
   * roll-up of the others is rollUpMinutes', after the transaction has committed.
   */
  async upsert(tx: Queryable): Promise<void> {
    if (this.all.length === 0) return;
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
    const workMemKb = Math.min(WORK_MEM_KB.max, Math.max(WORK_MEM_KB.min, rows.length * WORK_MEM_KB_PER_ROW));
    const statement = statementsFor(this.family);
    await tx.query(statement.pageLock, [`${workMemKb}kB`]);
    const { rows: marks } = await tx.query<{ rolling: string | number }>(statement.rolling);
    if (this.oldest < Number(marks[0]!.rolling)) await tx.query(statement.rollingLock);
    await tx.query(statement.page, [`${json}]`]);
  }
}

/**
 * Rolls the family's minutes up into its hours and days, up to a minute before the newest minute stored (two,
 * live, early in the newest: ROLL_UP_INTO_MINUTE_SECONDS), in two transactions of its own (see the top of this
 * file); answers how many seconds of minutes it rolled up (0 when none was due). The projections run it after their pages (Projection.afterPages).
 */
export async function rollUpMinutes(db: Db, family: RollupFamily, options: RollUpOptions = {}): Promise<number> {
  const statement = statementsFor(family);
  const nowSeconds = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  await db.transaction(async (tx) => {
    await tx.query(statement.startRollUpLock);
    await tx.query(statement.startRollUp, [nowSeconds]);
  });
  return db.transaction(async (tx) => {
    await tx.query(statement.rollUpLock, [`${ROLL_UP_WORK_MEM_KB}kB`]);
    const { rows } = await tx.query<{ seconds: string | number; through: string | number }>(statement.rollUp);
    const seconds = Number(rows[0]!.seconds);
    // The mark moved in a statement of its own, after the rows: its row is locked only until the commit that follows.
    if (seconds > 0) await tx.query(statement.rolled, [rows[0]!.through]);
    await options.beforeCommit?.();
    return seconds;
  });
}

export interface RollUpOptions {
  /** The clock (unix seconds) that tells a live newest minute (ROLL_UP_INTO_MINUTE_SECONDS); Date.now() by default. */
  nowSeconds?: number;
  /** For tests: awaited after step 2's statement, before its commit. */
  beforeCommit?: () => Promise<void>;
}

/** The increments merged per keys and minute (RollupRows), as the statement's rows. */
export function mergeIncrements(family: RollupFamily, increments: readonly RollupIncrement[]): readonly (string | number)[][] {
  return RollupRows.of(family, increments).rows();
}

/** Adds the increments (merged first: RollupRows) to the family's minutes; the roll-up is rollUpMinutes', after the transaction. */
export async function upsertRollups(tx: Queryable, family: RollupFamily, increments: readonly RollupIncrement[]): Promise<void> {
  await RollupRows.of(family, increments).upsert(tx);
}

function statementsFor(family: RollupFamily): FamilyStatements {
  let found = statements.get(family);
  if (!found) {
    // The second key of both locks: the family's table in the connection's schema.
    const key = `hashtext(current_schema() || '.${family.table}')`;
    const rolled = rolledTable(family);
    // Named: planning these many-CTE statements cost 40-80 ms a page, more than a small page's writes.
    found = {
      pageLock: prepared(`SELECT set_config('work_mem', $1, true), pg_advisory_xact_lock_shared(${ROLL_UP_LOCK_CLASS}, ${key})`),
      rolling: prepared(`SELECT coalesce(max(greatest(rolled_through, rolling_through)), 0) AS rolling FROM ${rolled}`),
      rollingLock: prepared(`SELECT pg_advisory_xact_lock(${ROLLING_LOCK_CLASS}, ${key})`),
      page: prepared(pageStatement(family)),
      startRollUpLock: prepared(`SELECT pg_advisory_xact_lock(${ROLL_UP_LOCK_CLASS}, ${key})`),
      startRollUp: prepared(startRollUpStatement(family)),
      rollUpLock: prepared(`SELECT set_config('work_mem', $1, true), pg_advisory_xact_lock(${ROLLING_LOCK_CLASS}, ${key})`),
      rollUp: prepared(rollUpStatement(family)),
      rolled: prepared(`UPDATE ${rolled} SET rolled_through = $1 WHERE rolled_through < $1`),
    };
    statements.set(family, found);
  }
  return found;
}

/** Adds rows of counts (`source`, with minute_start in unix seconds) to one of the family's tables. */
function upsertInto(family: RollupFamily, bucket: TrendBucket, source: string): string {
  const keys = family.keys.join(', ');
  const counts = family.counts.join(', ');
  const table = bucketTable(family.table, bucket);
  // From unix seconds (UTC), not date_trunc: that follows the session's TimeZone and could put a day
  // boundary somewhere else on another connection.
  const start = bucket === 'MINUTE' ? 'minute_start' : `(minute_start - minute_start % ${BUCKET_SECONDS[bucket]})`;
  // The increments are one row per keys and minute already (RollupRows merged them): the minutes take them
  // as they are. A GROUP BY there hashed 50,000 rows of jsonb values, spilled past work_mem to disk, and cost
  // PostgreSQL 40% more CPU for a page at 50,000 active tenants (1,370 against 840 ms).
  const select =
    bucket === 'MINUTE'
      ? `SELECT ${keys}, to_timestamp(${start}), ${counts} FROM ${source}`
      : `SELECT ${keys}, to_timestamp(${start}), ${family.counts.map((count) => `sum(${count})`).join(', ')} FROM ${source} GROUP BY ${keys}, ${start}`;
  return `INSERT INTO ${table} (${keys}, bucket_start, ${counts})
      ${select}
      ON CONFLICT (${family.primaryKey.join(', ')}) DO UPDATE SET
        ${family.counts.map((count) => `${count} = ${table}.${count} + EXCLUDED.${count}`).join(', ')}`;
}

/** A page's rows ($1: arrays, RollupRows) into the minutes; those before the mark into the hours and days too. */
function pageStatement(family: RollupFamily): string {
  const keys = family.keys.join(', ');
  const counts = family.counts.join(', ');
  const fields = [
    ...family.keys.map((key, index) => `r->>${index} AS ${key}`),
    `(r->>${family.keys.length})::bigint AS minute_start`,
    ...family.counts.map((count, index) => `(r->>${family.keys.length + 1 + index})::bigint AS ${count}`),
  ];
  return `WITH increments AS (SELECT ${fields.join(', ')} FROM jsonb_array_elements($1::jsonb) AS r),
    minutes AS (${upsertInto(family, 'MINUTE', 'increments')}),
    late AS (SELECT ${keys}, minute_start, ${counts} FROM increments WHERE minute_start < ${rolledThrough(family)}),
    hours AS (${upsertInto(family, 'HOUR', 'late')})
    ${upsertInto(family, 'DAY', 'late')}`;
}

/**
 * Step 1 of a roll-up: `rolling` set to a minute before the newest minute stored, or two while the newest is
 * the clock's and at most ROLL_UP_INTO_MINUTE_SECONDS in (never moved back). A newest minute ahead of the
 * clock (a recorder's clock ahead of this process's) is not waited for.
 */
function startRollUpStatement(family: RollupFamily): string {
  const rolled = rolledTable(family);
  // The open minutes (openMinutes.ts) count among the newest, and a roll-up stops before the oldest of them
  // (a minute closes a few shards a page): a minute is rolled up once it is all in the minute table.
  const minutes = `(SELECT extract(epoch FROM max(bucket_start))::bigint FROM ${bucketTable(family.table, 'MINUTE')})`;
  const open = family.openShards === undefined ? undefined : openTable(family);
  const newest = open === undefined ? minutes : `greatest(${minutes}, (SELECT max(minute_start) FROM ${open}))`;
  const before = `newest - ${ROLL_UP_AFTER_SECONDS} * (CASE WHEN $1::bigint - newest BETWEEN 0 AND ${ROLL_UP_INTO_MINUTE_SECONDS} THEN 2 ELSE 1 END)`;
  return `INSERT INTO ${rolled} (rolled_through, rolling_through)
      SELECT 0, ${open === undefined ? before : `least(${before}, (SELECT min(minute_start) FROM ${open}))`} FROM (
        SELECT ${newest} AS newest
      ) AS stored WHERE newest IS NOT NULL
      ON CONFLICT (singleton) DO UPDATE SET rolling_through = greatest(${rolled}.rolled_through, ${rolled}.rolling_through, EXCLUDED.rolling_through)`;
}

/** Step 2: the stored minutes in [rolled, rolling) into the hours and days; answers the seconds rolled up and `rolling`. */
function rollUpStatement(family: RollupFamily): string {
  const keys = family.keys.join(', ');
  const counts = family.counts.join(', ');
  const minuteTable = bucketTable(family.table, 'MINUTE');
  return `WITH target AS (
      SELECT coalesce(max(rolled_through), 0) AS since, coalesce(max(rolling_through), 0) AS through FROM ${rolledTable(family)}
    ),
    to_roll_up AS (
      SELECT ${keys}, extract(epoch FROM bucket_start)::bigint AS minute_start, ${counts}
        FROM ${minuteTable}, target
        WHERE target.through > target.since
          AND bucket_start >= to_timestamp(target.since) AND bucket_start < to_timestamp(target.through)
    ),
    hours AS (${upsertInto(family, 'HOUR', 'to_roll_up')}),
    days AS (${upsertInto(family, 'DAY', 'to_roll_up')})
    SELECT greatest(through - since, 0) AS seconds, through FROM target`;
}

/**
 * A family's rows at one bucket size, as a relation to read FROM: the bucket's table, for hours and days also the
 * minutes not yet rolled up, and the family's open minutes (openRows.ts), each counted in the hour or day it falls
 * in. Callers filter and aggregate it as they did the table alone (a filter on keys or bucket_start reaches every
 * part). `tenantParam`: a parameter holding the only tenant the caller reads (only its shard of the open minutes
 * is read).
 */
export function bucketRows(family: RollupFamily, bucket: TrendBucket, tenantParam?: string): string {
  const table = bucketTable(family.table, bucket);
  const keys = family.keys.join(', ');
  const counts = family.counts.join(', ');
  const open = family.openShards === undefined ? '' : `\n    UNION ALL\n    ${openRows(family, bucket, tenantParam)}`;
  if (bucket === 'MINUTE') return open === '' ? table : `(SELECT ${keys}, bucket_start, ${counts} FROM ${table}${open})`;
  const size = BUCKET_SECONDS[bucket];
  return `(SELECT ${keys}, bucket_start, ${counts} FROM ${table}
    UNION ALL
    SELECT ${keys}, to_timestamp(floor(extract(epoch FROM bucket_start) / ${size}) * ${size}) AS bucket_start, ${counts}
      FROM ${bucketTable(family.table, 'MINUTE')}
      WHERE bucket_start >= to_timestamp(${rolledThrough(family)})${open})`;
}
