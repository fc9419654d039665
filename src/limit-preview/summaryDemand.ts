// What one AdmissionsRecorded event says of demand: its summaries (a table, or a reference expanded to one by
// the caller) as seconds of DemandMinutes. The projection (projections/admissionDemand.ts) adds every rate
// dimension's summaries; a preview reading the ledger's tail (readDemand.ts) only those of its dimension,
// tenants and range. Both read the same way, so the tail reads as the read model would once applied.
import { ADMISSION_FIELDS, COUNT_FIELDS, entriesOf, summaryTable, type AdmissionsRecordedData, type DecodedSummaryRefs, type SummaryTable } from '../ledger/index.ts';
import { DIMENSION_CATALOG, DIMENSIONS, type AdmissionSummary } from '../governance/index.ts';
import type { DemandMinutes, SecondCounts } from './demandSeconds.ts';

/**
 * The longest summary kept, spread evenly over its seconds: a Governor's summary covers its flush interval,
 * a leasing client's a minute; an hour covers a recorder outage's merged windows. A longer one is not kept
 * (the preview says so): spread over its seconds it would say little of any one of them.
 */
export const MAX_SPAN_SECONDS = 3600;

/** The last second a summary may start at and be kept: the end of the year 9999, as the trends bound it. */
const LAST_SECOND = 253_402_300_799;

export interface SummaryFilter {
  /** Whether summaries of this dimension are kept. */
  dimension: (dimension: string) => boolean;
  /** Only these tenants; null: every one. */
  tenants: ReadonlySet<string> | null;
  /** Only seconds in [fromSecond, toSecond). */
  fromSecond: number;
  toSecond: number;
}

/** The dimensions a preview replays, whose demand the read model keeps: the rates (not the count ceilings). */
export const REPLAYED_DIMENSIONS: ReadonlySet<string> = new Set(DIMENSIONS.filter((dimension) => DIMENSION_CATALOG[dimension].kind !== 'COUNT_CEILING'));

/** What the projection keeps: every replayed dimension's seconds, of every tenant. */
export const EVERY_REPLAYED_SUMMARY: SummaryFilter = {
  dimension: (dimension) => REPLAYED_DIMENSIONS.has(dimension),
  tenants: null,
  fromSecond: 0,
  toSecond: Number.POSITIVE_INFINITY,
};

const READ = ['tenantId', 'dimension', 'allowance', 'fromSecond', 'seconds', 'admittedUnits', 'admittedMessages', 'shedUnits', 'shedMessages', 'rejectedUnits', 'rejectedMessages'] as const;

/** A count: a non-negative finite number, else 0 (a stored row that holds anything else counts nothing). */
const count = (value: unknown) => (typeof value === 'number' && value > 0 && value < Infinity ? value : 0);

/** The count in a row's `column`, 0 where the table has no such column. No closure per row: a page reads millions. */
const at = (row: readonly unknown[], column: number) => (column < 0 ? 0 : count(row[column]));

const counts: SecondCounts = { units: 0, messages: 0, refusedUnits: 0, refusedMessages: 0 };

/**
 * Adds the demand of an event's data (a table, the list shape of older events, or a reference decoded by
 * SummaryKeySources.decodedOf) to `minutes`: per summary, units and messages offered (admitted + shed + rejected) and
 * the part refused then (shed + rejected). A malformed summary (no tenant, a start that is no whole second
 * within 1970..9999, a span over MAX_SPAN_SECONDS) is passed over.
 */
export function addSummaryDemand(minutes: DemandMinutes, data: AdmissionsRecordedData | SummaryTable<AdmissionSummary> | DecodedSummaryRefs, filter: SummaryFilter): void {
  if (data === null || typeof data !== 'object' || 'keysOf' in data) return;
  if ('positions' in data) return addDecoded(minutes, data, filter);
  const table = 'entries' in data ? summaryTable(ADMISSION_FIELDS, entriesOf(data)) : data;
  const { fields, rows } = table;
  if (!Array.isArray(fields) || !Array.isArray(rows)) return;
  const [tenantAt, dimensionAt, allowanceAt, fromAt, secondsAt, admittedUnitsAt, admittedMessagesAt, shedUnitsAt, shedMessagesAt, rejectedUnitsAt, rejectedMessagesAt] =
    READ.map((field) => (fields as readonly string[]).indexOf(field)) as number[] as [number, number, number, number, number, number, number, number, number, number, number];
  if (tenantAt < 0 || dimensionAt < 0 || fromAt < 0) return;
  for (const row of rows) {
    if (!Array.isArray(row)) continue;
    const dimension = row[dimensionAt];
    const tenantId = row[tenantAt];
    const fromSecond = row[fromAt];
    const seconds = keptSeconds(filter, dimension, tenantId, fromSecond, secondsAt < 0 ? 1 : count(row[secondsAt]));
    if (seconds === 0) continue;
    setCounts(at(row, admittedUnitsAt), at(row, admittedMessagesAt), at(row, shedUnitsAt), at(row, shedMessagesAt), at(row, rejectedUnitsAt), at(row, rejectedMessagesAt));
    const allowance = allowanceAt >= 0 && typeof row[allowanceAt] === 'string' ? (row[allowanceAt] as string) : '';
    minutes.addSpan(dimension as string, tenantId as string, allowance, fromSecond as number, seconds, counts, filter.fromSecond, filter.toSecond);
  }
}

/**
 * The seconds a summary spans (at least 1) when it is kept, or 0 when it is passed over: a dimension or tenant
 * the filter leaves out, no tenant, a start that is no whole second within 1970..9999, a span over
 * MAX_SPAN_SECONDS, or no second within the filter's range. One rule for tables and references.
 */
function keptSeconds(filter: SummaryFilter, dimension: unknown, tenantId: unknown, fromSecond: unknown, spanned: number): number {
  if (typeof dimension !== 'string' || !filter.dimension(dimension)) return 0;
  if (typeof tenantId !== 'string' || (filter.tenants !== null && !filter.tenants.has(tenantId))) return 0;
  if (!Number.isSafeInteger(fromSecond) || (fromSecond as number) < 0 || (fromSecond as number) > LAST_SECOND) return 0;
  const seconds = Math.max(1, Math.floor(spanned));
  if (seconds > MAX_SPAN_SECONDS) return 0;
  if ((fromSecond as number) + seconds <= filter.fromSecond || (fromSecond as number) >= filter.toSecond) return 0;
  return seconds;
}

/** A summary's counts as `counts` holds them: offered (admitted + shed + rejected) and refused (shed + rejected). */
function setCounts(admittedUnits: number, admittedMessages: number, shedUnits: number, shedMessages: number, rejectedUnits: number, rejectedMessages: number): void {
  counts.refusedUnits = shedUnits + rejectedUnits;
  counts.refusedMessages = shedMessages + rejectedMessages;
  counts.units = admittedUnits + counts.refusedUnits;
  counts.messages = admittedMessages + counts.refusedMessages;
}

// Where a reference's counts are among its columns (COUNT_FIELDS' order).
const [REF_FROM, REF_SECONDS, REF_ADMITTED_UNITS, REF_ADMITTED_MESSAGES, REF_SHED_UNITS, REF_SHED_MESSAGES, REF_REJECTED_UNITS, REF_REJECTED_MESSAGES] = (
  ['fromSecond', 'seconds', 'admittedUnits', 'admittedMessages', 'shedUnits', 'shedMessages', 'rejectedUnits', 'rejectedMessages'] as const
).map((field) => COUNT_FIELDS.indexOf(field)) as [number, number, number, number, number, number, number, number];

/**
 * A reference decoded (SummaryKeySources.decodedOf), read in place from its columns: a summary of one second finds
 * its minute by its keys' position in the source (DemandMinutes.addSecondAt), not by its keys. The same summaries
 * are kept and passed over as in a table.
 */
function addDecoded(minutes: DemandMinutes, decoded: DecodedSummaryRefs, filter: SummaryFilter): void {
  const { source, positions, columns } = decoded;
  const at = minutes.positionsOf(source);
  for (let i = 0; i < positions.length; i++) {
    const position = positions[i]!;
    const dimension = source.dimension[position];
    const tenantId = source.tenantId[position];
    const fromSecond = columns[REF_FROM]![i]!;
    const seconds = keptSeconds(filter, dimension, tenantId, fromSecond, count(columns[REF_SECONDS]![i]));
    if (seconds === 0) continue;
    setCounts(
      count(columns[REF_ADMITTED_UNITS]![i]),
      count(columns[REF_ADMITTED_MESSAGES]![i]),
      count(columns[REF_SHED_UNITS]![i]),
      count(columns[REF_SHED_MESSAGES]![i]),
      count(columns[REF_REJECTED_UNITS]![i]),
      count(columns[REF_REJECTED_MESSAGES]![i]),
    );
    const rawAllowance = source.allowance[position];
    const allowance = typeof rawAllowance === 'string' ? rawAllowance : '';
    // One second in the range (nearly every summary): found by position. A span: by its keys, second by second.
    if (seconds === 1) minutes.addSecondAt(at, position, dimension as string, tenantId as string, allowance, fromSecond, counts);
    else minutes.addSpan(dimension as string, tenantId as string, allowance, fromSecond, seconds, counts, filter.fromSecond, filter.toSecond);
  }
}
