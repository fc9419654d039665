// A family's open minutes: the newest minutes its projection still adds to, held in the projection's memory and
// written whole each page as packed rows (openRows.ts; migrations/0240_trend_open_minutes.sql), one per shard
// of tenants touched. A minute is written to the minute table once, when it closes, and its packed rows are
// deleted in the same transaction; reads add the packed rows to the tables (bucketRows), so nothing is read
// twice or missed at any moment.
//
// Why: live, a page every 2 s upserted a row per active tenant and minute. At 100,000 active tenants that was
// 0.8-1.2 s of PostgreSQL a page (8-12 µs a row, however the rows were sent) on a 2-core host that also
// admits: the trends fell 7-8 s behind. The same rows packed in 64 rows of arrays take about a tenth of it.
//
// Which minutes are open: the newest minute seen (not more than MAX_AHEAD_SECONDS ahead of the clock) and the
// one before it, where a recorder a few seconds late still adds. A summary of an older minute, or one further
// ahead, is added to the minute table by the page as before (RollupRows.upsert, with the roll-up's rules for
// late minutes). When the newest minute moves on, the minute before the one before it closes, a few shards a
// page (CLOSE_ROWS_PER_PAGE): closing 100,000 tenants' minute in one page wrote 100,000 rows in it, and the page
// took 3-4 s beside the other work of a busy host, where the trends' lag is held to 7 s. An older minute (a page
// catching up spans minutes) closes whole at once. Past MAX_OPEN_ROWS, the oldest open minutes close early, so
// the memory held stays bounded. A roll-up stops before the oldest minute with packed rows (upsertRollups.ts).
//
// The memory and the packed rows agree because each page locks the mark row (`<table>_open_mark`) first and
// compares its token with the one this process wrote last: another runner's page, a page of this process that
// rolled back, or a rebuild's truncation each leave another token, and the packed rows are then read again
// before anything is added. Each page writes a token of its own.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../db/db.ts';
import { prepared } from '../../db/preparedStatements.ts';
import { shardHashOf } from './openRows.ts';
import { openMarkTable, openTable, type RollupFamily } from './rollupFamily.ts';
import { RollupRows } from './upsertRollups.ts';

/** A minute this far ahead of the clock is not held open (a recorder's clock far ahead would close all others). */
const MAX_AHEAD_SECONDS = 120;

/**
 * Rows held open in all (about 200 bytes each): past it the oldest open minutes close early. Two minutes of
 * 200,000 active tenants fit.
 */
const MAX_OPEN_ROWS = 400_000;

/**
 * Rows of a closing minute written to the minute table per page, a shard at a time (at least one shard): at
 * 100,000 active tenants a minute closes over five live pages (10 s), well before a roll-up reaches it.
 */
const CLOSE_ROWS_PER_PAGE = 20_000;

interface OpenStatements {
  ensureMark: string;
  lockMark: string;
  read: string;
  write: string;
  remove: string;
  mark: string;
}

export class OpenMinutes {
  /** Per open minute, its rows per shard (undefined: a shard of a closing minute already closed). */
  private minutes = new Map<number, (RollupRows | undefined)[]>();
  /** Shards changed by this page, per minute. */
  private changed = new Map<number, Set<number>>();
  /** Shards closed by this page, per minute: their packed rows are deleted when it writes. */
  private closedShards = new Map<number, number[]>();
  /** Closed minutes' rows, to be added to the minute table by the caller (takeClosed). */
  private closedRows: RollupRows[] = [];
  private newestMinute = -Infinity;
  private rowCount = 0;
  /** The token of the last page of this process that began; the memory is right when the mark holds it. */
  private token: string | undefined;
  private readonly shards: number;
  private readonly statements: OpenStatements;
  private readonly maxRows: number;
  private readonly closeRowsPerPage: number;

  /**
   * `maxRows`: rows held open in all before the oldest minutes close (MAX_OPEN_ROWS); `closeRowsPerPage`: rows of
   * a closing minute closed per page (CLOSE_ROWS_PER_PAGE). Smaller in tests.
   */
  constructor(
    readonly family: RollupFamily,
    options: { maxRows?: number; closeRowsPerPage?: number } = {},
  ) {
    if (family.openShards === undefined) throw new Error(`the family ${family.table} holds no open minutes`);
    this.shards = family.openShards;
    this.statements = statementsFor(family);
    this.maxRows = options.maxRows ?? MAX_OPEN_ROWS;
    this.closeRowsPerPage = options.closeRowsPerPage ?? CLOSE_ROWS_PER_PAGE;
  }

  /** Rows held open. */
  get size(): number {
    return this.rowCount;
  }

  /**
   * A page's first statement, in its transaction: locks the mark (the pages of other runners wait), and reads
   * the packed rows again when the mark's token is not the one this process wrote last.
   */
  async begin(tx: Queryable): Promise<void> {
    await tx.query(this.statements.ensureMark);
    const { rows } = await tx.query<{ token: string }>(this.statements.lockMark);
    if (this.token === undefined || rows[0]?.token !== this.token) await this.reload(tx);
    this.token = randomUUID();
    this.changed.clear();
    this.closedShards.clear();
    this.closedRows = [];
  }

  /**
   * Adds counts to an open minute and answers true; or answers false when the minute is not open (older than the
   * one before the newest, or too far ahead of `nowSeconds`): the caller adds it to the minute table. Keys in
   * `family.keys` order (the first is the tenant), counts in `family.counts` order; both are copied. `shardHash`:
   * the tenant's shardHashOf, when the caller knows it (openRows.ts' SourceShardHashes).
   */
  add(keys: readonly string[], minuteStart: number, counts: readonly number[], nowSeconds: number, shardHash = shardHashOf(keys[0]!)): boolean {
    if (minuteStart > nowSeconds + MAX_AHEAD_SECONDS) return false;
    if (minuteStart > this.newestMinute) {
      this.newestMinute = minuteStart;
      // Older than the minute before the one before: closed whole now (a page catching up).
      for (const minute of [...this.minutes.keys()]) if (minute < minuteStart - 120) this.close(minute);
    }
    if (minuteStart < this.newestMinute - 60) return false;
    const shards = this.shardsOf(minuteStart);
    const shard = shardHash % this.shards;
    let rows = shards[shard];
    // Closed by closeOldest earlier in this page: open again.
    if (rows === undefined) shards[shard] = rows = new RollupRows(this.family);
    const before = rows.size;
    rows.addValues(keys, minuteStart, counts);
    this.rowCount += rows.size - before;
    let changed = this.changed.get(minuteStart);
    if (changed === undefined) this.changed.set(minuteStart, (changed = new Set()));
    changed.add(shard);
    if (this.rowCount > this.maxRows) this.closeOldest();
    return true;
  }

  /**
   * Closes what is due at the end of a page: of the minutes before the one before the newest (no summary adds to
   * them any more), shards up to closeRowsPerPage rows, oldest minute first. takeClosed answers their rows.
   */
  closeDue(): void {
    let budget = this.closeRowsPerPage;
    for (const minute of this.oldestFirst()) {
      if (minute >= this.newestMinute - 60 || budget <= 0) return;
      const shards = this.minutes.get(minute)!;
      for (let shard = 0; shard < shards.length && budget > 0; shard++) {
        const rows = shards[shard];
        if (rows === undefined) continue;
        budget -= Math.max(1, rows.size);
        this.closeShard(minute, shards, shard);
      }
      if (shards.every((rows) => rows === undefined)) this.minutes.delete(minute);
    }
  }

  /** The rows of the minutes closed since the last call, for the caller to add to the minute table in this page. */
  takeClosed(): RollupRows[] {
    const taken = this.closedRows;
    this.closedRows = [];
    return taken;
  }

  /** The page's last statements: the shards it closed, deleted; the shards it changed, rewritten whole; its token. */
  async write(tx: Queryable): Promise<void> {
    // Deletes first: a shard closed and opened again in this page (closeOldest) went to the minute table; its new
    // rows follow.
    for (const [minute, shards] of this.closedShards) await tx.query(this.statements.remove, [minute, shards]);
    for (const [minute, shards] of this.changed) {
      const held = this.minutes.get(minute);
      if (held === undefined) continue;
      for (const shard of shards) {
        const rows = held[shard];
        if (rows !== undefined) await tx.query(this.statements.write, [minute, shard, ...columnsOf(this.family, rows)]);
      }
    }
    await tx.query(this.statements.mark, [this.token]);
  }

  /** Closes every shard of a minute. */
  private close(minute: number): void {
    const shards = this.minutes.get(minute);
    if (shards === undefined) return;
    for (let shard = 0; shard < shards.length; shard++) if (shards[shard] !== undefined) this.closeShard(minute, shards, shard);
    this.minutes.delete(minute);
  }

  private closeShard(minute: number, shards: (RollupRows | undefined)[], shard: number): void {
    const rows = shards[shard]!;
    shards[shard] = undefined;
    this.rowCount -= rows.size;
    if (rows.size > 0) this.closedRows.push(rows);
    this.changed.get(minute)?.delete(shard);
    let closed = this.closedShards.get(minute);
    if (closed === undefined) this.closedShards.set(minute, (closed = []));
    closed.push(shard);
  }

  /** Closes open minutes, oldest first, until the rows held are within maxRows (the newest too, if need be). */
  private closeOldest(): void {
    for (const minute of this.oldestFirst()) {
      if (this.rowCount <= this.maxRows) return;
      this.close(minute);
    }
  }

  /** A minute's rows per shard, made empty when the minute is not held yet. */
  private shardsOf(minute: number): (RollupRows | undefined)[] {
    let shards = this.minutes.get(minute);
    if (shards === undefined) {
      shards = Array.from({ length: this.shards }, () => new RollupRows(this.family));
      this.minutes.set(minute, shards);
    }
    return shards;
  }

  /** The minutes held, oldest first (a copy: closing one deletes it from the map). */
  private oldestFirst(): number[] {
    return [...this.minutes.keys()].sort((a, b) => a - b);
  }

  private async reload(tx: Queryable): Promise<void> {
    this.minutes.clear();
    this.changed.clear();
    this.newestMinute = -Infinity;
    this.rowCount = 0;
    const { family } = this;
    const { rows } = await tx.query<Record<string, unknown>>(this.statements.read);
    const keys: string[] = new Array<string>(family.keys.length);
    const counts: number[] = new Array<number>(family.counts.length);
    for (const row of rows) {
      const minute = Number(row.minute_start);
      const shards = this.shardsOf(minute);
      const columns = family.keys.map((key) => row[key] as string[]);
      const countColumns = family.counts.map((count) => row[count] as (string | number)[]);
      const held = shards[Number(row.shard)]!;
      for (let index = 0; index < columns[0]!.length; index++) {
        for (let key = 0; key < keys.length; key++) keys[key] = columns[key]![index]!;
        for (let count = 0; count < counts.length; count++) counts[count] = Number(countColumns[count]![index]);
        held.addValues(keys, minute, counts);
      }
      this.rowCount += columns[0]!.length;
      if (minute > this.newestMinute) this.newestMinute = minute;
    }
  }
}

/**
 * A shard's rows as the write statement's parameters, each column an array literal: keys, then counts. Made
 * here rather than by the driver (which takes arrays too): its general serializer took 220-290 ms for a page of
 * 100,000 rows against 60 ms, in the thread that parses the summaries. Keys are quoted with `"` and `\` escaped
 * (nothing else is special inside quotes); counts are whole numbers (wholeCount).
 */
function columnsOf(family: RollupFamily, rows: RollupRows): string[] {
  const held = rows.rows();
  const columns: string[] = [];
  const keys = family.keys.length;
  for (let column = 0; column < keys + family.counts.length; column++) {
    const at = column < keys ? column : column + 1;
    let literal = '{';
    for (let index = 0; index < held.length; index++) {
      if (index > 0) literal += ',';
      const value = held[index]![at]!;
      literal += column < keys ? quoted(value as string) : String(value);
    }
    columns.push(`${literal}}`);
  }
  return columns;
}

const SPECIAL = /["\\]/;

function quoted(value: string): string {
  return SPECIAL.test(value) ? `"${value.replace(/["\\]/g, '\\$&')}"` : `"${value}"`;
}

const statements = new Map<RollupFamily, OpenStatements>();

function statementsFor(family: RollupFamily): OpenStatements {
  let found = statements.get(family);
  if (!found) {
    const open = openTable(family);
    const mark = openMarkTable(family);
    const columns = [...family.keys, ...family.counts];
    const types = [...family.keys.map(() => 'text[]'), ...family.counts.map(() => 'bigint[]')];
    found = {
      ensureMark: prepared(`INSERT INTO ${mark} (singleton, token) VALUES (true, '') ON CONFLICT (singleton) DO NOTHING`),
      lockMark: prepared(`SELECT token FROM ${mark} FOR UPDATE`),
      read: prepared(`SELECT minute_start, shard, ${columns.join(', ')} FROM ${open}`),
      write: prepared(`INSERT INTO ${open} (minute_start, shard, ${columns.join(', ')})
        VALUES ($1, $2, ${types.map((type, index) => `$${index + 3}::${type}`).join(', ')})
        ON CONFLICT (minute_start, shard) DO UPDATE SET ${columns.map((column) => `${column} = EXCLUDED.${column}`).join(', ')}`),
      remove: prepared(`DELETE FROM ${open} WHERE minute_start = $1 AND shard = ANY ($2::integer[])`),
      mark: prepared(`UPDATE ${mark} SET token = $1`),
    };
    statements.set(family, found);
  }
  return found;
}
