// The recorded demand a preview replays: per (tenant, allowance) and second, the units and messages offered
// (admitted + shed + rejected) and the part of them refused then, read from the ledger's AdmissionsRecorded
// summaries of one dimension. The trend tables hold minutes, too coarse for a token bucket (a minute's demand
// says nothing of how it was spread), so the summaries, which the Governor cuts per second, are the source.
//
// Summaries live in daily partitions of gl_events (migrations/0100_ledger_summary_partitions.sql) with no
// index on recorded_at: each query reads one UTC day, so a day's partition is scanned once; the tables are
// read here, and only the dimension and tenants asked about are kept. Events written before summaries were
// tables (a list of objects) are not read. A summary the Recorder wrote as a reference to an earlier event's
// keys (src/ledger/catalog/summaryRefs.ts) is expanded from that event: read earlier the same day (a day's
// events are read in ledger order, and a reference never crosses a UTC midnight), else looked up by its id.
import type { Queryable } from '../db/db.ts';
import { ADMISSIONS_STREAM, isSummaryRefTable, lookUpSummaryEvent, SummaryKeySources } from '../ledger/index.ts';
import type { Dimension } from '../governance/index.ts';

/** One recorded span (usually one second) of one (tenant, allowance). */
export interface DemandSpan {
  fromSecond: number;
  seconds: number;
  units: number;
  messages: number;
  refusedUnits: number;
  refusedMessages: number;
}

/** Recorded demand by tenant, then by allowance ('' for a dimension without allowances), spans in time order. */
export type RecordedDemand = Map<string, Map<string, DemandSpan[]>>;

/**
 * How long after its last second a summary may have been recorded and still be replayed. The Governor records
 * a second about a second later and a leasing client within a minute or two; a backlog drained hours later is
 * not read (the preview says so).
 */
export const RECORDED_LATE_SECONDS = 300;

/**
 * The longest summary replayed, spread evenly over its seconds: a Governor's summary covers its flush interval,
 * a leasing client's a minute; an hour covers a recorder outage's merged windows. A longer one is not read.
 */
export const MAX_SPAN_SECONDS = 3600;

const DAY_MS = 86_400_000;

// One day's AdmissionsRecorded tables as text. Reading them is most of a preview's cost, and PostgreSQL's
// own jsonb functions (an element per summary, a cast per field) were several times slower than handing the
// text over and reading it here: a preview of 7 days at 6 M recorded tenant-seconds took 177 s that way.
const DEMAND_SQL = `
SELECT e.event_id::text AS id, (e.data->'fields')::text AS fields, (e.data->'rows')::text AS rows,
       CASE WHEN e.data ? 'keysOf' THEN e.data::text END AS ref
  FROM gl_events e
 WHERE e.stream = '${ADMISSIONS_STREAM}' AND e.type = 'AdmissionsRecorded'
   AND e.recorded_at >= $1 AND e.recorded_at < $2
 ORDER BY e.tx_id, e.global_position`;

const READ = ['tenantId', 'dimension', 'allowance', 'fromSecond', 'seconds', 'admittedUnits', 'admittedMessages', 'shedUnits', 'shedMessages', 'rejectedUnits', 'rejectedMessages'] as const;

/** A count: a non-negative finite number, else 0 (a stored row that holds anything else counts nothing). */
const count = (value: unknown) => (typeof value === 'number' && value > 0 && value < Infinity ? value : 0);

export interface DemandQuery {
  dimension: Dimension;
  /** Only these tenants; null: every tenant with demand. */
  tenantIds: readonly string[] | null;
  from: Date;
  /** Exclusive. */
  to: Date;
}

/** The demand of the range, one query per UTC day of recording (see the head of this file). */
export async function readRecordedDemand(q: Queryable, query: DemandQuery): Promise<RecordedDemand> {
  const demand: RecordedDemand = new Map();
  const fromSecond = Math.floor(query.from.getTime() / 1000);
  const toSecond = Math.ceil(query.to.getTime() / 1000);
  const recordedUntil = query.to.getTime() + RECORDED_LATE_SECONDS * 1000;
  const tenants = query.tenantIds === null ? null : new Set(query.tenantIds);
  const keySources = new SummaryKeySources();
  const days: Array<[Date, Date]> = [];
  for (let dayStart = Math.floor(query.from.getTime() / DAY_MS) * DAY_MS; dayStart < recordedUntil; dayStart += DAY_MS) {
    days.push([new Date(Math.max(dayStart, query.from.getTime())), new Date(Math.min(dayStart + DAY_MS, recordedUntil))]);
  }
  // Two days at a time: the database reads one while this process parses the other (at most two days' text
  // in memory, about 60 MB a day at 860,000 recorded tenant-seconds).
  let next = 0;
  const readDays = async () => {
    while (next < days.length) {
      const [windowFrom, windowTo] = days[next++]!;
      const { rows } = await q.query<{ id: string; fields: string | null; rows: string | null; ref: string | null }>(DEMAND_SQL, [windowFrom, windowTo]);
      for (const event of rows) {
        if (event.ref === null) {
          if (event.fields === null || event.rows === null) continue;
          const table = { fields: JSON.parse(event.fields) as unknown, rows: JSON.parse(event.rows) as unknown };
          keySources.remember(event.id, table);
          addEvent(demand, table.fields, table.rows, query.dimension, tenants, fromSecond, toSecond);
          continue;
        }
        const reference: unknown = JSON.parse(event.ref);
        if (!isSummaryRefTable(reference)) continue;
        const table = await keySources.tableOf(reference, (eventId) => lookUpSummaryEvent(q, eventId));
        if (typeof table === 'string') continue;
        addEvent(demand, table.fields, table.rows, query.dimension, tenants, fromSecond, toSecond);
      }
    }
  };
  await Promise.all([readDays(), readDays()]);
  // A summary recorded on the next day lands in a later query: order each key's spans once all are in.
  for (const byAllowance of demand.values()) for (const spans of byAllowance.values()) spans.sort((a, b) => a.fromSecond - b.fromSecond);
  return demand;
}

/** Adds one event's summaries of the dimension (and tenants) asked about; anything malformed is passed over. */
function addEvent(
  demand: RecordedDemand,
  fields: unknown,
  rows: unknown,
  dimension: string,
  tenants: ReadonlySet<string> | null,
  fromSecond: number,
  toSecond: number,
): void {
  if (!Array.isArray(fields) || !Array.isArray(rows)) return;
  const [tenantAt, dimensionAt, allowanceAt, fromAt, secondsAt, admittedUnitsAt, admittedMessagesAt, shedUnitsAt, shedMessagesAt, rejectedUnitsAt, rejectedMessagesAt] =
    READ.map((field) => fields.indexOf(field));
  if (tenantAt! < 0 || dimensionAt! < 0 || fromAt! < 0) return;
  for (const row of rows) {
    if (!Array.isArray(row) || row[dimensionAt!] !== dimension) continue;
    const tenantId = row[tenantAt!];
    const spanFrom = row[fromAt!];
    const seconds = secondsAt! < 0 ? 1 : Math.max(1, count(row[secondsAt!]));
    if (typeof tenantId !== 'string' || (tenants !== null && !tenants.has(tenantId))) continue;
    if (typeof spanFrom !== 'number' || !(spanFrom >= fromSecond && spanFrom < toSecond) || seconds > MAX_SPAN_SECONDS) continue;
    const at = (column: number) => (column < 0 ? 0 : count(row[column]));
    const shedUnits = at(shedUnitsAt!) + at(rejectedUnitsAt!);
    const shedMessages = at(shedMessagesAt!) + at(rejectedMessagesAt!);
    const allowance = allowanceAt! >= 0 && typeof row[allowanceAt!] === 'string' ? (row[allowanceAt!] as string) : '';
    let byAllowance = demand.get(tenantId);
    if (byAllowance === undefined) demand.set(tenantId, (byAllowance = new Map()));
    let spans = byAllowance.get(allowance);
    if (spans === undefined) byAllowance.set(allowance, (spans = []));
    spans.push({
      fromSecond: spanFrom,
      seconds: Math.floor(seconds),
      units: at(admittedUnitsAt!) + shedUnits,
      messages: at(admittedMessagesAt!) + shedMessages,
      refusedUnits: shedUnits,
      refusedMessages: shedMessages,
    });
  }
}
