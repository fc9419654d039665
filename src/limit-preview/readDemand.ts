// The recorded demand a preview replays: per (tenant, allowance) of one dimension, the seconds with demand and
// in each the units and messages offered (admitted + shed + rejected) and the part refused then. The trend
// tables hold minutes, too coarse for a token bucket (a minute's demand says nothing of how it was spread), so
// the source is the per-second summaries the Governor records.
//
// Read from the read model the admission-demand projection keeps of them (gl_demand_seconds, packed per
// minute: demandSeconds.ts), up to its checkpoint; the summaries appended after the checkpoint (the projection
// applies them every 2 s, and may be further behind after a restart or a rebuild) are read from the ledger and
// taken the same way (summaryDemand.ts). The rows and the checkpoint come from one statement, so one snapshot:
// every summary is read once, from one place or the other.
import type { Queryable } from '../db/db.ts';
import { ADMISSIONS_STREAM, lookUpSummaryEvent, SummaryKeySources } from '../ledger/index.ts';
import type { Dimension } from '../governance/index.ts';
import { addMinute, DemandMinutes } from './demandSeconds.ts';
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
// moved the checkpoint wrote exactly the rows of the events up to it.
const modelSql = (byTenant: boolean) => `
SELECT NULL::text AS tenant_id, NULL::text AS allowance, NULL::float8 AS minute_start, NULL::bytea AS seconds,
       commit_position::text AS commit_position, prepare_position::text AS prepare_position
  FROM gl_checkpoints WHERE projection = '${DEMAND_PROJECTION}'
UNION ALL
SELECT tenant_id, allowance, minute_start::float8, seconds, NULL, NULL
  FROM gl_demand_seconds
 WHERE dimension = $1 AND minute_start >= $2 AND minute_start < $3${byTenant ? ' AND tenant_id = ANY($4::text[])' : ''}`;

const TAIL_SQL = `
SELECT event_id::text AS id, data::text AS data, tx_id::text AS tx_id, global_position::text AS global_position
  FROM gl_events
 WHERE stream = '${ADMISSIONS_STREAM}' AND type = 'AdmissionsRecorded'
   AND (tx_id, global_position) > ($1::xid8, $2::bigint) AND recorded_at >= $3
 ORDER BY tx_id, global_position
 LIMIT ${TAIL_PAGE_EVENTS}`;

interface ModelRow {
  tenant_id: string | null;
  allowance: string | null;
  minute_start: number | null;
  seconds: Uint8Array | null;
  commit_position: string | null;
  prepare_position: string | null;
}

/** A minute's packed seconds of one (tenant, allowance). */
interface MinuteBytes {
  minuteStart: number;
  bytes: Uint8Array;
}

export async function readRecordedDemand(q: Queryable, query: DemandQuery): Promise<RecordedDemand> {
  const fromSecond = Math.floor(query.from.getTime() / 1000);
  const toSecond = Math.ceil(query.to.getTime() / 1000);
  const params: unknown[] = [query.dimension, fromSecond - (fromSecond % 60), toSecond];
  if (query.tenantIds !== null) params.push(query.tenantIds);
  const { rows } = await q.query<ModelRow>(modelSql(query.tenantIds !== null), params);

  const byKey = new Map<string, MinuteBytes[]>();
  const add = (tenantId: string, allowance: string, minute: MinuteBytes) => {
    const key = `${tenantId}\u0000${allowance}`;
    const minutes = byKey.get(key);
    if (minutes === undefined) byKey.set(key, [minute]);
    else minutes.push(minute);
  };
  let after: [string, string] = ['0', '0'];
  for (const row of rows) {
    if (row.tenant_id === null) {
      if (row.commit_position !== null && row.prepare_position !== null) after = [row.commit_position, row.prepare_position];
      continue;
    }
    add(row.tenant_id, row.allowance!, { minuteStart: row.minute_start!, bytes: row.seconds! });
  }

  const tail = await readTail(q, query, after, fromSecond, toSecond);
  for (const minute of tail.values()) add(minute.tenantId, minute.allowance, { minuteStart: minute.minuteStart, bytes: Uint8Array.from(minute.bytes) });

  const demand: RecordedDemand = new Map();
  const sums = new Float64Array(240);
  const present = new Uint8Array(60);
  for (const [key, minutes] of byKey) {
    minutes.sort((a, b) => a.minuteStart - b.minuteStart);
    // Columns sized for the most seconds the minutes can hold (a record is at least 3 bytes), then cut.
    let most = 0;
    for (const minute of minutes) most += Math.min(60, Math.floor(minute.bytes.length / 3));
    const columns = Array.from({ length: 5 }, () => new Float64Array(most));
    let length = 0;
    for (let i = 0; i < minutes.length; i++) {
      const { minuteStart } = minutes[i]!;
      // A minute may come twice: its row, and seconds of it appended after the checkpoint.
      addMinute(minutes[i]!.bytes, sums, present);
      if (i + 1 < minutes.length && minutes[i + 1]!.minuteStart === minuteStart) continue;
      for (let offset = 0; offset < 60; offset++) {
        if (present[offset] === 0) continue;
        const second = minuteStart + offset;
        if (second < fromSecond || second >= toSecond || length >= most) continue;
        columns[0]![length] = second;
        for (let column = 1; column < 5; column++) columns[column]![length] = sums[offset * 4 + column - 1]!;
        length++;
      }
      sums.fill(0);
      present.fill(0);
    }
    const [seconds, units, messages, refusedUnits, refusedMessages] = columns.map((column) => column.subarray(0, length)) as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
    const series: DemandSeries = { seconds, units, messages, refusedUnits, refusedMessages };
    if (series.seconds.length === 0) continue;
    const split = key.indexOf('\u0000');
    const tenantId = key.slice(0, split);
    let byAllowance = demand.get(tenantId);
    if (byAllowance === undefined) demand.set(tenantId, (byAllowance = new Map()));
    byAllowance.set(key.slice(split + 1), series);
  }
  return demand;
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
      const table = await keySources.tableOf(stored, (eventId) => lookUpSummaryEvent(q, eventId));
      // A reference whose source the ledger no longer holds: the projection sets it aside, and so does this.
      if (typeof table !== 'string') addSummaryDemand(minutes, table as Parameters<typeof addSummaryDemand>[1], filter);
    }
    if (rows.length < TAIL_PAGE_EVENTS) return minutes;
    const last = rows[rows.length - 1]!;
    after = [last.tx_id, last.global_position];
  }
}
