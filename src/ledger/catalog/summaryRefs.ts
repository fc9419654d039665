// The compact shape of an AdmissionsRecorded event: summaries whose keys (tenant, dimension, allowance) an
// earlier event of the same stream already lists, as positions into that event's rows, and the counts as
// run-length coded columns.
//
// At 50,000 active tenants the same keys are recorded every second: written out as rows, the keys were most
// of the ledger's ~20 GB a day (about 5 bytes a summary after PostgreSQL's compression). A summary table
// (admissions.ts) stays the shape that names keys; the Recorder writes one for a key every 30-60 minutes (its
// "key source") and meanwhile refers to it:
//
//   { "keysOf": "<id of an earlier AdmissionsRecorded table event>",
//     "at": "0,1*3999",                      positions into its rows, as deltas, run-length coded
//     "columns": { "fromSecond": "1764740000*4000", "seconds": "1*4000", "admittedUnits": "3*4000", ... } }
//
// Every field of ADMISSION_FIELDS after the keys is a column; each value is an integer (the Recorder writes a
// table for a summary with any other value). The data stays JSON, so the verifiable ledger's leaf (JCS of the
// data) covers it as it covers a table, and the source is itself a leaf.
//
// Where the source is: an earlier event of the same stream, written by the same Recorder less than an hour
// before, in the same UTC day of the database's clock, which picks the day partition: the database refuses a
// reference recorded in another day than its source, or to an event it does not hold
// (migrations/0250_ledger_summary_refs_same_day.sql), so an archived day's file holds the sources of all its
// references. Readers keep the sources they read
// (SummaryKeySources) and look up one they have not read (a reader that starts mid-hour) by its event id.
import type { AdmissionSummary } from '../../governance/index.ts';
import { ADMISSION_FIELDS, entriesOf, type AdmissionsRecordedData, type SummaryRefTable, type SummaryTable } from './admissions.ts';

/** The fields a reference takes from its source, in ADMISSION_FIELDS' order. */
export const KEY_FIELDS = ['tenantId', 'dimension', 'allowance'] as const;

/** The fields a reference carries as columns: every field of ADMISSION_FIELDS after the keys. */
export const COUNT_FIELDS = ADMISSION_FIELDS.slice(KEY_FIELDS.length) as readonly (keyof AdmissionSummary & string)[];

export function isSummaryRefTable(data: unknown): data is SummaryRefTable {
  return data !== null && typeof data === 'object' && typeof (data as SummaryRefTable).keysOf === 'string';
}

/** Integers as `value` or `value*times`, comma separated: "3*4000" is 4,000 threes. */
export function runLengthCode(values: readonly number[]): string {
  return runLengthCodeOf(values.length, (i) => values[i]!);
}

/**
 * runLengthCode of the `count` values `valueAt(0)`, `valueAt(1)`, ...: for a writer whose values are a field
 * of objects in some order (the Recorder: 11 count columns of 51,000 summaries a second), without an array
 * of them per column.
 */
export function runLengthCodeOf(count: number, valueAt: (index: number) => number): string {
  let code = '';
  for (let i = 0; i < count; ) {
    const value = valueAt(i);
    let end = i + 1;
    while (end < count && valueAt(end) === value) end++;
    code += `${i > 0 ? ',' : ''}${value}${end - i > 1 ? `*${end - i}` : ''}`;
    i = end;
  }
  return code;
}

/** The values of a run-length code; null when it is not one (or holds more than `maxValues`). */
export function runLengthDecode(code: unknown, maxValues: number): number[] | null {
  if (typeof code !== 'string') return null;
  const values: number[] = [];
  if (code === '') return values;
  for (const part of code.split(',')) {
    const star = part.indexOf('*');
    const value = Number(star < 0 ? part : part.slice(0, star));
    const times = star < 0 ? 1 : Number(part.slice(star + 1));
    if (!Number.isSafeInteger(value) || !Number.isSafeInteger(times) || times < 1 || values.length + times > maxValues) return null;
    for (let t = 0; t < times; t++) values.push(value);
  }
  return values;
}

/** Sorted positions as their first value and the deltas after it, run-length coded. */
export function positionsCode(sorted: readonly number[]): string {
  return positionsCodeOf(sorted.length, (i) => sorted[i]!);
}

/** positionsCode of the `count` sorted positions `positionAt(0)`, `positionAt(1)`, ... (see runLengthCodeOf). */
export function positionsCodeOf(count: number, positionAt: (index: number) => number): string {
  return runLengthCodeOf(count, (i) => (i === 0 ? positionAt(0) : positionAt(i) - positionAt(i - 1)));
}

/** The keys of a source event: one array per key field, indexed by the source's row. */
export interface SourceKeys {
  tenantId: unknown[];
  dimension: unknown[];
  allowance: unknown[];
}

/** The key columns of a summary table (a source); null when the data is not a table. */
export function sourceKeysOf(data: unknown): SourceKeys | null {
  if (data === null || typeof data !== 'object' || isSummaryRefTable(data)) return null;
  const { fields, rows } = data as Partial<SummaryTable<AdmissionSummary>>;
  if (!Array.isArray(fields) || !Array.isArray(rows)) return null;
  const columns = KEY_FIELDS.map((field) => fields.indexOf(field));
  if (columns[0]! < 0) return null;
  const keys: SourceKeys = { tenantId: [], dimension: [], allowance: [] };
  for (const row of rows) {
    const cells = Array.isArray(row) ? row : [];
    keys.tenantId.push(cells[columns[0]!]);
    keys.dimension.push(columns[1]! < 0 ? undefined : cells[columns[1]!]);
    keys.allowance.push(columns[2]! < 0 ? undefined : cells[columns[2]!]);
  }
  return keys;
}

/**
 * A reference decoded, without a row made per summary: its summaries' positions into the source's rows, and one
 * column per COUNT_FIELDS field (in that order), summary `i`'s values at index `i`. A reader that adds summaries
 * up (the trends, the demand) reads them in place, and may keep what it found for a position of a source (a
 * tenant's shard, its row): the same position is the same keys in every reference to that source.
 */
export interface DecodedSummaryRefs {
  source: SourceKeys;
  positions: number[];
  columns: number[][];
}

/**
 * A reference as its positions and columns (DecodedSummaryRefs), or the reason it cannot be read: a position
 * outside the source, columns of another length than the positions, a value no integer.
 */
export function decodeSummaryRefs(data: SummaryRefTable, source: SourceKeys): DecodedSummaryRefs | string {
  const limit = source.tenantId.length;
  const positions = runLengthDecode(data.at, 1_000_000);
  if (positions === null) return 'its positions ("at") are not a run-length code';
  const columns: number[][] = [];
  for (const field of COUNT_FIELDS) {
    const column = runLengthDecode(data.columns?.[field] ?? `0*${positions.length}`, positions.length);
    if (column === null || column.length !== positions.length) return `its column ${field} does not hold one integer per position`;
    columns.push(column);
  }
  // The deltas become positions in place.
  for (let i = 0; i < positions.length; i++) {
    const position = i === 0 ? positions[0]! : positions[i - 1]! + positions[i]!;
    if (position < 0 || position >= limit) return `position ${position} is outside its source's ${limit} rows`;
    positions[i] = position;
  }
  return { source, positions, columns };
}

/**
 * A reference as the summary table it stands for (rows in ADMISSION_FIELDS' order), or the reason it cannot
 * be read (decodeSummaryRefs').
 */
export function expandSummaryRefs(data: SummaryRefTable, source: SourceKeys): SummaryTable<AdmissionSummary> | string {
  const decoded = decodeSummaryRefs(data, source);
  if (typeof decoded === 'string') return decoded;
  const { positions, columns } = decoded;
  const rows: unknown[][] = new Array<unknown[]>(positions.length);
  for (let i = 0; i < positions.length; i++) {
    const position = positions[i]!;
    const row = new Array<unknown>(ADMISSION_FIELDS.length);
    row[0] = source.tenantId[position];
    row[1] = source.dimension[position];
    row[2] = source.allowance[position];
    for (let c = 0; c < columns.length; c++) row[3 + c] = columns[c]![i];
    rows[i] = row;
  }
  return { fields: ADMISSION_FIELDS, rows };
}

/**
 * The key sources a reader has read, by event id, at most `maxKeys` keys in all (the oldest sources are
 * forgotten first). A reader feeds it every AdmissionsRecorded event in order (`remember`), and asks it for
 * the source of a reference (`get`); one it lacks is looked up in the ledger (`lookUp`).
 */
export class SummaryKeySources {
  private readonly sources = new Map<string, SourceKeys>();
  private keys = 0;

  constructor(private readonly maxKeys = 2_000_000) {}

  remember(eventId: string, data: unknown): void {
    if (this.sources.has(eventId)) return;
    const keys = sourceKeysOf(data);
    if (keys === null || keys.tenantId.length === 0) return;
    this.sources.set(eventId, keys);
    this.keys += keys.tenantId.length;
    while (this.keys > this.maxKeys && this.sources.size > 1) {
      const [oldest, oldestKeys] = this.sources.entries().next().value!;
      this.sources.delete(oldest);
      this.keys -= oldestKeys.tenantId.length;
    }
  }

  get(eventId: string): SourceKeys | undefined {
    return this.sources.get(eventId);
  }

  /** tableOf without a look-up: a reference whose source was not read here answers why. */
  knownTableOf<Data>(data: Data): Exclude<Data, SummaryRefTable> | SummaryTable<AdmissionSummary> | string {
    if (!isSummaryRefTable(data)) return data as Exclude<Data, SummaryRefTable>;
    const source = this.get(data.keysOf);
    return source === undefined ? `the event its keys refer to (${String(data.keysOf)}) was not read here` : expandSummaryRefs(data, source);
  }

  /**
   * The data as a summary table: a reference expanded from its source (remembered, else `lookUp`'s data of the
   * event with that id), anything else as it is; a string names why a reference cannot be read.
   */
  async tableOf<Data>(data: Data, lookUp: (eventId: string) => Promise<unknown>): Promise<Exclude<Data, SummaryRefTable> | SummaryTable<AdmissionSummary> | string> {
    if (!isSummaryRefTable(data)) return data as Exclude<Data, SummaryRefTable>;
    const source = await this.sourceOf(data, lookUp);
    return typeof source === 'string' ? source : expandSummaryRefs(data, source);
  }

  /** tableOf for a reader that adds summaries up: a reference decoded (decodeSummaryRefs), not expanded into rows. */
  async decodedOf<Data>(data: Data, lookUp: (eventId: string) => Promise<unknown>): Promise<Exclude<Data, SummaryRefTable> | DecodedSummaryRefs | string> {
    if (!isSummaryRefTable(data)) return data as Exclude<Data, SummaryRefTable>;
    const source = await this.sourceOf(data, lookUp);
    return typeof source === 'string' ? source : decodeSummaryRefs(data, source);
  }

  private async sourceOf(data: SummaryRefTable, lookUp: (eventId: string) => Promise<unknown>): Promise<SourceKeys | string> {
    let source = this.get(data.keysOf);
    if (source === undefined) {
      const found = await lookUp(data.keysOf);
      if (found !== undefined && found !== null) {
        this.remember(data.keysOf, found);
        source = this.get(data.keysOf) ?? sourceKeysOf(found) ?? undefined;
      }
    }
    return source ?? `the event its keys refer to (${String(data.keysOf)}) is not in the ledger`;
  }
}

/**
 * A flatMap callback that reads AdmissionsRecorded events, given in ledger order, as their summaries, with each
 * reference expanded from its source (an earlier event of the same list): for readers of a whole stretch of the
 * ledger (tools, audits, tests) that need every decision's counts. Other events give none. A reference whose
 * source is not among the events read before it throws: such a list cannot say what was decided.
 */
export function admissionSummaryReader(): (event: { id?: string; type?: string; data: unknown }) => AdmissionSummary[] {
  const sources = new SummaryKeySources();
  return (event) => {
    if (event.type !== undefined && event.type !== 'AdmissionsRecorded') return [];
    if (event.id !== undefined) sources.remember(event.id, event.data);
    const data = sources.knownTableOf(event.data);
    if (typeof data === 'string') throw new Error(`a summary reference cannot be read: ${data}`);
    return entriesOf(data as AdmissionsRecordedData);
  };
}
