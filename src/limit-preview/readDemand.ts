// The recorded demand a preview replays: per (tenant, allowance) of one dimension, the seconds with demand and
// in each the units and messages offered (admitted + shed + rejected) and the part refused then. The trend
// tables hold minutes, too coarse for a token bucket (a minute's demand says nothing of how it was spread), so
// the source is the per-second summaries the Governor records.
//
// Read from the read model the admission-demand projection keeps of them (gl_demand_seconds, packed per minute:
// demandSeconds.ts; and gl_demand_open, the open minutes packed per shard of tenants: openDemand.ts), up to its
// checkpoint; the summaries appended after the checkpoint (the projection applies them every 15 s, and may be
// further behind after a restart or a rebuild) are read from the ledger and taken the same way (summaryDemand.ts).
// The rows, the open rows and the checkpoint come from one statement, so one snapshot: every summary is read once,
// from one place or another.
import type { Queryable } from '../db/db.ts';
import { ADMISSIONS_STREAM, lookUpSummaryEvent, SummaryKeySources } from '../ledger/index.ts';
import type { Dimension } from '../governance/index.ts';
import { addMinute, DemandMinutes, readMinuteInOrder } from './demandSeconds.ts';
import { forEachOpenRecord, OPEN_SHARDS } from './openDemand.ts';
import { shardOf } from '../metrics/index.ts';
import { addSummaryDemand } from './summaryDemand.ts';

/** The projection that keeps gl_demand_seconds (projections/admissionDemand.ts). */
export const DEMAND_PROJECTION = 'admission-demand';

/** One (tenant, allowance)'s seconds with demand, in time order, as parallel columns. */
export interface DemandSeries {
  seconds: ArrayLike<number>;
  units: ArrayLike<number>;
  messages: ArrayLike<number>;
  refusedUnits: ArrayLike<number>;
  refusedMessages: ArrayLike<number>;
}

/** Recorded demand by tenant, then by allowance ('' for a dimension without allowances). */
export type RecordedDemand = Map<string, Map<string, DemandSeries>>;

export interface DemandQuery {
  dimension: Dimension;
  /** Only these tenants; null: every tenant with demand. */
  tenantIds: readonly string[] | null;
  from: Date;
  /** Exclusive. */
  to: Date;
}

/**
 * How long before the range a summary of it may have been recorded: a leasing client's or another process's
 * clock may run ahead of the service's (`/v1/admissions` takes instants up to 60 s ahead). Bounds the read of
 * the ledger's tail to the days of the range.
 */
const RECORDED_EARLY_SECONDS = 300;

/** Events of the ledger's tail per statement. */
const TAIL_PAGE_EVENTS = 256;

// The checkpoint and the rows in one statement: one snapshot, in which the projection's transaction that
// moved the checkpoint wrote exactly the rows of the events up to it. A (tenant, allowance)'s minutes come as
// one row, their bytes end to end: a thousand rows to parse for a tier of 1,000 tenants, not 100,000.
const modelSql = (byTenant: boolean) => `
SELECT NULL::text AS tenant_id, NULL::text AS allowance, NULL::float8[] AS minutes, NULL::int[] AS lengths, NULL::bytea AS seconds,
       commit_position::text AS commit_position, prepare_position::text AS prepare_position
  FROM gl_checkpoints WHERE projection = '${DEMAND_PROJECTION}'
UNION ALL
SELECT tenant_id, allowance, array_agg(minute_start::float8 ORDER BY minute_start), array_agg(length(seconds) ORDER BY minute_start),
       string_agg(seconds, ''::bytea ORDER BY minute_start), NULL, NULL
  FROM gl_demand_seconds
 WHERE dimension = $1 AND minute_start >= $2 AND minute_start < $3${byTenant ? ' AND tenant_id = ANY($4::text[])' : ''}
 GROUP BY tenant_id, allowance
UNION ALL
SELECT NULL, NULL, ARRAY[minute_start::float8], NULL, records, NULL, NULL
  FROM gl_demand_open
 WHERE dimension = $1 AND minute_start >= $2 AND minute_start < $3${byTenant ? ' AND shard = ANY($5::smallint[])' : ''}`;

// tx_id >= the checkpoint's, beside the row comparison: the planner estimates that one from the column's
// statistics and reads each day's partition by its (type, tx_id, global_position) index; the row comparison
// alone it took for a third of the ledger, and scanned every partition.
const TAIL_SQL = `
SELECT event_id::text AS id, data::text AS data, tx_id::text AS tx_id, global_position::text AS global_position
  FROM gl_events
 WHERE stream = '${ADMISSIONS_STREAM}' AND type = 'AdmissionsRecorded'
   AND tx_id >= $1::xid8 AND (tx_id, global_position) > ($1::xid8, $2::bigint) AND recorded_at >= $3
 ORDER BY tx_id, global_position
 LIMIT ${TAIL_PAGE_EVENTS}`;

interface ModelRow {
  tenant_id: string | null;
  allowance: string | null;
  minutes: number[] | null;
  lengths: number[] | null;
  seconds: Uint8Array | null;
  commit_position: string | null;
  prepare_position: string | null;
}

/** Minutes of packed seconds of one (tenant, allowance), in time order: minute i is bytes[ends[i - 1], ends[i]). */
interface PackedMinutes {
  minutes: number[];
  ends: number[];
  bytes: Uint8Array;
}

export async function readRecordedDemand(q: Queryable, query: DemandQuery): Promise<RecordedDemand> {
  const fromSecond = Math.floor(query.from.getTime() / 1000);
  const toSecond = Math.ceil(query.to.getTime() / 1000);
  const params: unknown[] = [query.dimension, fromSecond - (fromSecond % 60), toSecond];
  const tenants = query.tenantIds === null ? null : new Set(query.tenantIds);
  if (query.tenantIds !== null) params.push(query.tenantIds, [...new Set(query.tenantIds.map((tenantId) => shardOf(tenantId, OPEN_SHARDS)))]);
  const { rows } = await q.query<ModelRow>(modelSql(query.tenantIds !== null), params);

  const byKey = new Map<string, PackedMinutes>();
  // Minutes to merge into the rows' by (tenant, allowance): the open minutes' packed records and the ledger's tail.
  const moreByKey = new Map<string, { minuteStart: number; bytes: Uint8Array }[]>();
  const addMore = (tenantId: string, allowance: string, minuteStart: number, bytes: Uint8Array) => {
    const key = `${tenantId}\u0000${allowance}`;
    const list = moreByKey.get(key);
    if (list === undefined) moreByKey.set(key, [{ minuteStart, bytes }]);
    else list.push({ minuteStart, bytes });
  };
  let after: [string, string] = ['0', '0'];
  for (const row of rows) {
    if (row.tenant_id === null) {
      if (row.commit_position !== null && row.prepare_position !== null) after = [row.commit_position, row.prepare_position];
      else if (row.seconds !== null) {
        // An open minute's packed row (openDemand.ts): the records of each (tenant, allowance) asked for.
        const minuteStart = row.minutes![0]!;
        forEachOpenRecord(row.seconds, { minuteStart, dimension: query.dimension }, (tenantId, allowance, records, start, end) => {
          if (tenants === null || tenants.has(tenantId)) addMore(tenantId, allowance, minuteStart, records.subarray(start, end));
        });
      }
      continue;
    }
    const ends: number[] = [];
    let end = 0;
    for (const length of row.lengths!) ends.push((end += length));
    byKey.set(`${row.tenant_id}\u0000${row.allowance!}`, { minutes: row.minutes!, ends, bytes: row.seconds! });
  }

  // The open minutes' records and the seconds after the checkpoint, merged into their keys' minutes in time order
  // (a minute may come from all three).
  const tail = await readTail(q, query, after, fromSecond, toSecond);
  for (const minute of tail.values()) addMore(minute.tenantId, minute.allowance, minute.minuteStart, Uint8Array.from(minute.bytes));
  for (const [key, list] of moreByKey) {
    const stored = byKey.get(key);
    // The list is this read's own: the stored minutes join it.
    const all = list;
    if (stored !== undefined) {
      for (let i = 0; i < stored.minutes.length; i++) all.push({ minuteStart: stored.minutes[i]!, bytes: stored.bytes.subarray(i === 0 ? 0 : stored.ends[i - 1]!, stored.ends[i]!) });
    }
    all.sort((a, b) => a.minuteStart - b.minuteStart);
    const bytes = new Uint8Array(all.reduce((sum, minute) => sum + minute.bytes.length, 0));
    const ends: number[] = [];
    let end = 0;
    for (const minute of all) {
      bytes.set(minute.bytes, end);
      ends.push((end += minute.bytes.length));
    }
    byKey.set(key, { minutes: all.map((minute) => minute.minuteStart), ends, bytes });
  }

  const demand: RecordedDemand = new Map();
  for (const [key, packed] of byKey) {
    const series = unpack(packed, fromSecond, toSecond);
    if (series.seconds.length === 0) continue;
    const split = key.indexOf('\u0000');
    const tenantId = key.slice(0, split);
    let byAllowance = demand.get(tenantId);
    if (byAllowance === undefined) demand.set(tenantId, (byAllowance = new Map()));
    byAllowance.set(key.slice(split + 1), series);
  }
  return demand;
}

const sums = new Float64Array(240);
const present = new Uint8Array(60);

/** A key's minutes as its series of seconds in [fromSecond, toSecond); a minute given twice in a row is one. */
function unpack({ minutes, ends, bytes }: PackedMinutes, fromSecond: number, toSecond: number): DemandSeries {
  // Columns sized for the most seconds the bytes can hold (a record is at least 3 bytes), then cut.
  const most = Math.min(60 * minutes.length, Math.floor(bytes.length / 3));
  const seconds = new Float64Array(most);
  const units = new Float64Array(most);
  const messages = new Float64Array(most);
  const refusedUnits = new Float64Array(most);
  const refusedMessages = new Float64Array(most);
  const columns = [seconds, units, messages, refusedUnits, refusedMessages] as const;
  let length = 0;
  for (let i = 0; i < minutes.length; i++) {
    const minuteStart = minutes[i]!;
    const start = i === 0 ? 0 : ends[i - 1]!;
    const twice = (i > 0 && minutes[i - 1] === minuteStart) || (i + 1 < minutes.length && minutes[i + 1] === minuteStart);
    // Nearly every minute holds its seconds once each, in order, wholly in the range: read straight into the columns.
    if (!twice && minuteStart >= fromSecond && minuteStart + 60 <= toSecond) {
      const read = readMinuteInOrder(bytes, start, ends[i]!, minuteStart, columns, length);
      if (read >= 0) {
        length = read;
        continue;
      }
    }
    addMinute(bytes, start, ends[i]!, sums, present);
    if (i + 1 < minutes.length && minutes[i + 1] === minuteStart) continue;
    for (let offset = 0; offset < 60; offset++) {
      if (present[offset] === 0) continue;
      present[offset] = 0;
      const second = minuteStart + offset;
      const slot = offset * 4;
      if (second >= fromSecond && second < toSecond && length < most) {
        seconds[length] = second;
        units[length] = sums[slot]!;
        messages[length] = sums[slot + 1]!;
        refusedUnits[length] = sums[slot + 2]!;
        refusedMessages[length] = sums[slot + 3]!;
        length++;
      }
      sums[slot] = sums[slot + 1] = sums[slot + 2] = sums[slot + 3] = 0;
    }
  }
  return {
    seconds: seconds.subarray(0, length),
    units: units.subarray(0, length),
    messages: messages.subarray(0, length),
    refusedUnits: refusedUnits.subarray(0, length),
    refusedMessages: refusedMessages.subarray(0, length),
  };
}

/**
 * The demand of the summaries after the projection's checkpoint, from the ledger: its AdmissionsRecorded
 * events in ledger order, references expanded from the sources read before them or looked up by id.
 */
async function readTail(q: Queryable, query: DemandQuery, after: [string, string], fromSecond: number, toSecond: number): Promise<DemandMinutes> {
  const minutes = new DemandMinutes();
  const filter = { dimension: (dimension: string) => dimension === query.dimension, tenants: query.tenantIds === null ? null : new Set(query.tenantIds), fromSecond, toSecond };
  const keySources = new SummaryKeySources();
  const recordedFrom = new Date((fromSecond - RECORDED_EARLY_SECONDS) * 1000);
  for (;;) {
    const { rows } = await q.query<{ id: string; data: string; tx_id: string; global_position: string }>(TAIL_SQL, [after[0], after[1], recordedFrom]);
    for (const event of rows) {
      const stored: unknown = JSON.parse(event.data);
      keySources.remember(event.id, stored);
      const table = await keySources.decodedOf(stored, (eventId) => lookUpSummaryEvent(q, eventId));
      // A reference whose source the ledger no longer holds: the projection sets it aside, and so does this.
      if (typeof table !== 'string') addSummaryDemand(minutes, table as Parameters<typeof addSummaryDemand>[1], filter);
    }
    if (rows.length < TAIL_PAGE_EVENTS) return minutes;
    const last = rows[rows.length - 1]!;
    after = [last.tx_id, last.global_position];
  }
}
