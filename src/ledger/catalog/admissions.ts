// Events the Governor's recorder appends: per-window summaries, so every admitted and shed unit is counted
// without one event per decision.
//
// At tens of thousands of active tenants the summaries are most of what the ledger stores and every
// admission projection reads: 50,000 entries a second. Written as objects, each entry repeats its 14 field
// names (about 260 bytes); so the summaries are written as a table instead: the field names once, then one
// array of values per entry (about 60 bytes). `entriesOf` reads both shapes, so events appended before the
// table shape read the same.
import type { AdmissionSummary, UnresolvedAdmissionSummary } from '../../governance/index.ts';

/** All admission summaries go to one stream; ordering within it is the recording order. */
export const ADMISSIONS_STREAM = 'governance-admissions';

/** Summaries as a table: `rows[i][j]` is the value of `fields[j]` in entry i. */
export interface SummaryTable<Entry> {
  fields: readonly (keyof Entry & string)[];
  rows: unknown[][];
}

/** The shape appended before summaries were written as tables; still read. */
export interface SummaryList<Entry> {
  entries: Entry[];
}

/**
 * Summaries whose keys an earlier table event of the stream lists: positions into its rows and run-length coded
 * count columns (summaryRefs.ts). Reads as a table once its source is known: SummaryKeySources.tableOf.
 */
export interface SummaryRefTable {
  keysOf: string;
  at: string;
  columns: Record<string, string>;
}


export type AdmissionsRecordedData = SummaryTable<AdmissionSummary> | SummaryList<AdmissionSummary> | SummaryRefTable;
export type UnresolvedAdmissionsRecordedData = SummaryTable<UnresolvedAdmissionSummary> | SummaryList<UnresolvedAdmissionSummary>;

export type AdmissionEventMap = {
  AdmissionsRecorded: AdmissionsRecordedData;
  UnresolvedAdmissionsRecorded: UnresolvedAdmissionsRecordedData;
};

/** The columns of an AdmissionsRecorded table, in the order the Recorder writes them. */
export const ADMISSION_FIELDS = [
  'tenantId',
  'dimension',
  'allowance',
  'fromSecond',
  'seconds',
  'admittedUnits',
  'admittedMessages',
  'shedUnits',
  'shedMessages',
  'rejectedUnits',
  'rejectedMessages',
  'unauthenticatedUnits',
  'unauthenticatedMessages',
  'hitSeconds',
] as const satisfies readonly (keyof AdmissionSummary)[];

/**
 * The columns of a table with what shadow limits (mode SHADOW) would have refused: the Recorder writes these
 * only for a batch where a shadow limit would have refused something, so tables without shadow limits stay as
 * they were; readers read every table by these names (a column a table lacks is an absent count, 0).
 */
export const SHADOW_ADMISSION_FIELDS = [...ADMISSION_FIELDS, 'shadowLimitedUnits', 'shadowLimitedMessages'] as const satisfies readonly (keyof AdmissionSummary)[];

/**
 * The columns of a table with refusals for a period quota among its entries: two more, written only then, so
 * the summaries of tenants without quotas (most of them) carry no column of zeros.
 */
export const QUOTA_ADMISSION_FIELDS = [...ADMISSION_FIELDS, 'quotaRejectedUnits', 'quotaRejectedMessages'] as const satisfies readonly (keyof AdmissionSummary)[];

/** Both: a batch with shadow counts and quota refusals. */
export const SHADOW_QUOTA_ADMISSION_FIELDS = [...SHADOW_ADMISSION_FIELDS, 'quotaRejectedUnits', 'quotaRejectedMessages'] as const satisfies readonly (keyof AdmissionSummary)[];

/** The columns a batch of summaries is written with: ADMISSION_FIELDS, plus the shadow or quota columns only when an entry carries such a count. */
export function admissionFieldsFor(entries: readonly AdmissionSummary[]): readonly (keyof AdmissionSummary & string)[] {
  const shadow = entries.some(hasShadowCounts);
  const quota = entries.some(hasQuotaCounts);
  return shadow ? (quota ? SHADOW_QUOTA_ADMISSION_FIELDS : SHADOW_ADMISSION_FIELDS) : quota ? QUOTA_ADMISSION_FIELDS : ADMISSION_FIELDS;
}

/** Whether the entry counts what a shadow limit would have refused (SHADOW_ADMISSION_FIELDS' columns). */
export function hasShadowCounts(entry: AdmissionSummary): boolean {
  return (entry.shadowLimitedUnits ?? 0) > 0 || (entry.shadowLimitedMessages ?? 0) > 0;
}

/** Whether the entry counts refusals for a quota (QUOTA_ADMISSION_FIELDS' columns). */
export function hasQuotaCounts(entry: AdmissionSummary): boolean {
  return (entry.quotaRejectedUnits ?? 0) > 0 || (entry.quotaRejectedMessages ?? 0) > 0;
}

/** Whether ADMISSION_FIELDS carry all the entry counts (admissionFieldsFor([entry]) is ADMISSION_FIELDS). */
export function fitsAdmissionFields(entry: AdmissionSummary): boolean {
  return !hasShadowCounts(entry) && !hasQuotaCounts(entry);
}

export const UNRESOLVED_FIELDS = ['tenantId', 'dimension', 'cause', 'fromSecond', 'seconds', 'units', 'messages'] as const satisfies readonly (keyof UnresolvedAdmissionSummary)[];

/** One entry as a row of `fields`' values; a field the entry lacks is written as 0 (every optional field is a count). */
export function summaryRow<Entry extends object>(fields: readonly (keyof Entry & string)[], entry: Entry): unknown[] {
  const row = new Array<unknown>(fields.length);
  for (let i = 0; i < fields.length; i++) {
    const value = entry[fields[i]!];
    // Only an absent field: a null allowance is a value.
    row[i] = value === undefined ? 0 : value;
  }
  return row;
}

export function summaryTable<Entry extends object>(fields: readonly (keyof Entry & string)[], entries: readonly Entry[]): SummaryTable<Entry> {
  return { fields, rows: entries.map((entry) => summaryRow(fields, entry)) };
}

/**
 * Visits each entry of the data, whichever shape it was written in, without making an object per entry: a
 * table's rows are read into one object, reused, so `visit` must copy what it keeps. For readers that go
 * through every summary of every event (the trend projection: 50,000 a second at 50,000 active tenants).
 */
export function forEachEntry(data: AdmissionsRecordedData, visit: (entry: Readonly<AdmissionSummary>) => void): void;
export function forEachEntry(data: UnresolvedAdmissionsRecordedData, visit: (entry: Readonly<UnresolvedAdmissionSummary>) => void): void;
export function forEachEntry<Entry>(data: SummaryTable<Entry> | SummaryList<Entry> | SummaryRefTable | null | undefined, visit: (entry: Entry) => void): void {
  visitEntries(data, visit);
}

/** A reference (summaryRefs.ts) visits nothing: a reader expands it first (SummaryKeySources.tableOf). */
function visitEntries<Entry>(data: SummaryTable<Entry> | SummaryList<Entry> | SummaryRefTable | null | undefined, visit: (entry: Entry) => void): void {
  if (data === null || typeof data !== 'object' || 'keysOf' in data) return;
  if ('entries' in data) {
    if (Array.isArray(data.entries)) for (const entry of data.entries) visit(entry);
    return;
  }
  const { fields, rows } = data as SummaryTable<Entry>;
  if (!Array.isArray(fields) || !Array.isArray(rows)) return;
  const entry: Record<string, unknown> = {};
  for (const row of rows) {
    if (!Array.isArray(row)) continue;
    for (let i = 0; i < fields.length; i++) entry[fields[i]!] = row[i];
    visit(entry as Entry);
  }
}

/**
 * For readers of every summary that cannot afford an object per summary: a table's rows, and for each of
 * `fields` the column it is in (-1 when the table lacks it: read as an absent count). Null for the list shape
 * of older events (read those with forEachEntry).
 */
export function summaryColumns<Entry>(
  data: SummaryTable<Entry> | SummaryList<Entry> | null | undefined,
  fields: readonly (keyof Entry & string)[],
): { rows: unknown[][]; columns: number[] } | null {
  if (data === null || typeof data !== 'object' || 'entries' in data) return null;
  const { fields: written, rows } = data;
  if (!Array.isArray(written) || !Array.isArray(rows)) return { rows: [], columns: fields.map(() => -1) };
  return { rows, columns: fields.map((field) => written.indexOf(field)) };
}

/** The entries of an AdmissionsRecorded or UnresolvedAdmissionsRecorded event's data, whichever shape it was written in. */
export function entriesOf(data: AdmissionsRecordedData): AdmissionSummary[];
export function entriesOf(data: UnresolvedAdmissionsRecordedData): UnresolvedAdmissionSummary[];
export function entriesOf<Entry extends object>(data: SummaryTable<Entry> | SummaryList<Entry> | SummaryRefTable | null | undefined): Entry[] {
  if (data !== null && typeof data === 'object' && 'entries' in data) return Array.isArray(data.entries) ? data.entries : [];
  const entries: Entry[] = [];
  // A table's rows are read into one reused object: each is copied out.
  visitEntries(data, (entry) => entries.push({ ...entry }));
  return entries;
}
