// The recorded demand a preview replays: per (tenant, allowance) and second, the units and messages offered
// (admitted + shed + rejected) and the part of them refused then, read from the ledger's AdmissionsRecorded
// summaries of one dimension. The trend tables hold minutes, too coarse for a token bucket (a minute's demand
// says nothing of how it was spread), so the summaries, which the Governor cuts per second, are the source.
//
// Summaries live in daily partitions of gl_events (migrations/0100_ledger_summary_partitions.sql) with no
// index on recorded_at: each query reads one UTC day, so a day's partition is scanned once, and the rows
// are summed in SQL per (tenant, allowance, span), so what reaches Node is one small row per recorded second.
import type { Queryable } from '../db/db.ts';
import { ADMISSION_FIELDS, ADMISSIONS_STREAM } from '../ledger/index.ts';
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

// The leading columns every AdmissionsRecorded table has had since summaries were written as tables (the
// unauthenticated counts and anything added later come after them).
const LEADING_FIELDS = ADMISSION_FIELDS.slice(0, 11);
const column = (field: (typeof LEADING_FIELDS)[number]) => LEADING_FIELDS.indexOf(field);
/** A column as a number, null when a stored row holds anything else (CASE: AND would not keep the cast from failing). */
const number = (field: (typeof LEADING_FIELDS)[number]) =>
  `(CASE WHEN jsonb_typeof(r->${column(field)}) = 'number' THEN (r->>${column(field)})::float8 END)`;
/** A count: 0 unless a number. */
const count = (field: (typeof LEADING_FIELDS)[number]) => `coalesce(${number(field)}, 0)`;

const DEMAND_SQL = `
SELECT tenant_id, allowance,
       json_agg(json_build_array(from_second, seconds, units, messages, refused_units, refused_messages) ORDER BY from_second)::text AS spans
FROM (
  SELECT r->>${column('tenantId')} AS tenant_id, coalesce(r->>${column('allowance')}, '') AS allowance,
         ${number('fromSecond')} AS from_second, greatest(1, ${number('seconds')}) AS seconds,
         sum(${count('admittedUnits')} + ${count('shedUnits')} + ${count('rejectedUnits')}) AS units,
         sum(${count('admittedMessages')} + ${count('shedMessages')} + ${count('rejectedMessages')}) AS messages,
         sum(${count('shedUnits')} + ${count('rejectedUnits')}) AS refused_units,
         sum(${count('shedMessages')} + ${count('rejectedMessages')}) AS refused_messages
  FROM gl_events e
    CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(e.data->'rows') = 'array' THEN e.data->'rows' ELSE '[]'::jsonb END) AS r
  WHERE e.stream = '${ADMISSIONS_STREAM}' AND e.type = 'AdmissionsRecorded'
    AND e.recorded_at >= $1 AND e.recorded_at < $2
    AND jsonb_path_query_array(e.data->'fields', '$[0 to ${LEADING_FIELDS.length - 1}]') = $3::jsonb
    AND jsonb_typeof(r) = 'array'
    AND r->>${column('dimension')} = $4
    AND ($5::text[] IS NULL OR r->>${column('tenantId')} = ANY($5::text[]))
    AND ${number('fromSecond')} >= $6 AND ${number('fromSecond')} < $7 AND ${number('seconds')} <= ${MAX_SPAN_SECONDS}
  GROUP BY 1, 2, 3, 4
) AS spans
GROUP BY tenant_id, allowance`;

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
  for (let dayStart = Math.floor(query.from.getTime() / DAY_MS) * DAY_MS; dayStart < recordedUntil; dayStart += DAY_MS) {
    const windowFrom = new Date(Math.max(dayStart, query.from.getTime()));
    const windowTo = new Date(Math.min(dayStart + DAY_MS, recordedUntil));
    const { rows } = await q.query<{ tenant_id: string; allowance: string; spans: string }>(DEMAND_SQL, [
      windowFrom,
      windowTo,
      JSON.stringify(LEADING_FIELDS),
      query.dimension,
      query.tenantIds === null ? null : [...query.tenantIds],
      fromSecond,
      toSecond,
    ]);
    for (const row of rows) {
      let byAllowance = demand.get(row.tenant_id);
      if (byAllowance === undefined) demand.set(row.tenant_id, (byAllowance = new Map()));
      let spans = byAllowance.get(row.allowance);
      if (spans === undefined) byAllowance.set(row.allowance, (spans = []));
      for (const [spanFrom, seconds, units, messages, refusedUnits, refusedMessages] of JSON.parse(row.spans) as number[][]) {
        spans.push({ fromSecond: spanFrom!, seconds: seconds!, units: units!, messages: messages!, refusedUnits: refusedUnits!, refusedMessages: refusedMessages! });
      }
    }
  }
  // A summary recorded on the next day lands in a later query: order each key's spans once all are in.
  for (const byAllowance of demand.values()) for (const spans of byAllowance.values()) spans.sort((a, b) => a.fromSecond - b.fromSecond);
  return demand;
}
