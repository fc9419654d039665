// The demand read model's open minutes (gl_demand_open, migration 0241): the newest minutes, still receiving
// seconds, held as a few packed rows per page instead of a row per tenant rewritten every page.
//
// A minute's row in gl_demand_seconds (demandSeconds.ts) is keyed by (dimension, tenant, minute, allowance). The
// projection applies a page every 15 s, and every page used to append to the row of each tenant it saw: four or
// five upserts of every active tenant's row a minute, 50,000-100,000 rows a page at 50,000 active tenants, 3-4 s
// of one PostgreSQL session every 15 s on a slower host, and its transaction held every ledger reader back
// meanwhile (the trends' lag rose to 4 s of their 5). Now a page's seconds of an open minute go to one row per
// (minute, dimension, shard of tenants): `records` holds, per (tenant, allowance), the tenant ID and allowance
// (UTF-8, each after its byte length as a 16-bit big-endian number) and the minute's records (after their byte
// length, 32-bit big-endian), as pushSecond wrote them. Once the ledger's clock is past a minute by a whole minute
// (OPEN_MINUTES), the page that sees it closes it: its packed rows are deleted and their records appended to
// the tenants' rows, once. Seconds of a minute already closed (a late summary, a span into the past) go to the
// tenants' rows straight away, as before.
//
// Readers add the packed rows of the range to the tenants' rows, in the same statement (readDemand.ts): the
// records of a second are summed wherever they lie, so a minute split between the two reads as one. A read of
// some tenants reads only their shards.
import type { Queryable } from '../db/db.ts';
import { shardOf } from '../metrics/index.ts';
import { appendDemandRows, demandRowsParameter } from './appendDemandMinutes.ts';
import { DemandMinutes, type DemandMinute } from './demandSeconds.ts';

/** Shards of tenants per open minute and dimension: a read of one tenant decodes a sixteenth of the open rows. */
export const OPEN_SHARDS = 16;

/**
 * Minutes before the ledger's newest recorded minute that stay open: at 12:02:xx the minutes from 12:01 on are
 * open, and 12:00 closes. A second of 12:00 recorded after that (a span, a leasing client's late summary) is
 * appended to its tenant's row.
 */
export const OPEN_MINUTES = 1;

/** The first minute still open when the newest event of a page was recorded at `recordedAt`. */
export function openFrom(recordedAt: Date): number {
  const second = Math.floor(recordedAt.getTime() / 1000);
  return second - (second % 60) - OPEN_MINUTES * 60;
}

const MAX_KEY_BYTES = 0xffff;

/** The packed records of `minutes` (one minute, one dimension, one shard), as a row's `records`. */
export function packOpenRecords(minutes: readonly DemandMinute[]): Buffer {
  let size = 0;
  for (const minute of minutes) size += 2 + Buffer.byteLength(minute.tenantId) + 2 + Buffer.byteLength(minute.allowance) + 4 + minute.bytes.length;
  const packed = Buffer.allocUnsafe(size);
  let at = 0;
  for (const minute of minutes) {
    at = writeKey(packed, at, minute.tenantId);
    at = writeKey(packed, at, minute.allowance);
    packed.writeUInt32BE(minute.bytes.length, at);
    at += 4;
    for (let i = 0; i < minute.bytes.length; i++) packed[at++] = minute.bytes[i]!;
  }
  return packed;
}

function writeKey(packed: Buffer, at: number, key: string): number {
  const length = packed.write(key, at + 2, 'utf8');
  if (length > MAX_KEY_BYTES) throw new RangeError(`a key of ${length} bytes does not fit an open demand row`);
  packed.writeUInt16BE(length, at);
  return at + 2 + length;
}

/** An open demand row holds bytes this module did not write: a length runs past its end. */
export class OpenDemandRowCutShort extends Error {
  constructor(minuteStart: number, dimension: string) {
    super(`an open demand row of minute ${minuteStart} (${dimension}) is cut short`);
    this.name = 'OpenDemandRowCutShort';
  }
}

/**
 * Calls `visit` for each (tenant, allowance) of the records of an open row (minute `minuteStart`, `dimension`),
 * with its records as `records[start, end)`. Throws OpenDemandRowCutShort at bytes this module did not write,
 * having visited what came before: the projection's page (writeDemand) and a preview (readDemand) both stop
 * there rather than count a minute short.
 */
export function forEachOpenRecord(
  records: Uint8Array,
  row: { minuteStart: number; dimension: string },
  visit: (tenantId: string, allowance: string, records: Uint8Array, start: number, end: number) => void,
): void {
  const packed = Buffer.from(records.buffer, records.byteOffset, records.byteLength);
  let at = 0;
  while (at < packed.length) {
    if (at + 2 > packed.length) break;
    const tenantEnd = at + 2 + packed.readUInt16BE(at);
    if (tenantEnd + 2 > packed.length) break;
    const tenantId = packed.toString('utf8', at + 2, tenantEnd);
    const allowanceEnd = tenantEnd + 2 + packed.readUInt16BE(tenantEnd);
    if (allowanceEnd + 4 > packed.length) break;
    const allowance = packed.toString('utf8', tenantEnd + 2, allowanceEnd);
    const end = allowanceEnd + 4 + packed.readUInt32BE(allowanceEnd);
    if (end > packed.length) break;
    visit(tenantId, allowance, records, allowanceEnd + 4, end);
    at = end;
  }
  if (at !== packed.length) throw new OpenDemandRowCutShort(row.minuteStart, row.dimension);
}

// These run every page.
const INSERT_OPEN_SQL = `
INSERT INTO gl_demand_open (minute_start, dimension, shard, records)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::smallint[], $4::bytea[])`;
const CLOSABLE_SQL = 'SELECT id, minute_start, dimension, records FROM gl_demand_open WHERE minute_start < $1 ORDER BY id';
const CLOSE_SQL = 'DELETE FROM gl_demand_open WHERE id = ANY($1::bigint[])';

/**
 * Writes a page's collected seconds, in the page's transaction: closes the open minutes before `from` (their
 * packed records appended to the tenants' rows, in the order they were written), appends the page's seconds of
 * those minutes and older ones to the tenants' rows, and packs its seconds from `from` on into new open rows.
 * Every second is written once, to one place. Everything is read and made before the first write: on PostgreSQL
 * a transaction holds the ledger's readers back from its first write on (src/ledger/projectPage.ts), and this
 * thread runs niced. The projection's pages run one at a time, so the rows read are still there to delete.
 */
export async function writeDemand(tx: Queryable, minutes: DemandMinutes, from: number): Promise<void> {
  const rows = new DemandMinutes();
  const closable = await tx.query<{ id: string; minute_start: string; dimension: string; records: Uint8Array }>(CLOSABLE_SQL, [from]);
  for (const row of closable.rows) {
    const minuteStart = Number(row.minute_start);
    forEachOpenRecord(row.records, { minuteStart, dimension: row.dimension }, (tenantId, allowance, records, start, end) =>
      rows.appendRecords(row.dimension, tenantId, allowance, minuteStart, records, start, end),
    );
  }
  const open = new Map<string, { minuteStart: number; dimension: string; shard: number; minutes: DemandMinute[] }>();
  for (const minute of minutes.values()) {
    if (minute.minuteStart < from) {
      rows.appendRecords(minute.dimension, minute.tenantId, minute.allowance, minute.minuteStart, minute.bytes);
      continue;
    }
    const shard = shardOf(minute.tenantId, OPEN_SHARDS);
    const key = `${minute.minuteStart}\u0000${minute.dimension}\u0000${shard}`;
    const row = open.get(key);
    if (row === undefined) open.set(key, { minuteStart: minute.minuteStart, dimension: minute.dimension, shard, minutes: [minute] });
    else row.minutes.push(minute);
  }
  const minuteStarts: number[] = [];
  const dimensions: string[] = [];
  const shards: number[] = [];
  const records: Buffer[] = [];
  for (const row of open.values()) {
    minuteStarts.push(row.minuteStart);
    dimensions.push(row.dimension);
    shards.push(row.shard);
    records.push(packOpenRecords(row.minutes));
  }
  const appended = await demandRowsParameter(rows);

  // The open rows first: the driver turns their parameters into text before the statement is sent, and so
  // before the transaction's first write. The rows read above are all of minutes before `from`, none of these.
  if (records.length > 0) await tx.query(INSERT_OPEN_SQL, [minuteStarts, dimensions, shards, records]);
  if (closable.rows.length > 0) await tx.query(CLOSE_SQL, [closable.rows.map((row) => row.id)]);
  await appendDemandRows(tx, appended);
}
