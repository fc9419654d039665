// Read model: admitted, shed, rejected (of which quota-rejected) and unauthenticated units and messages, what
// shadow limits would have refused, and limit hits per tenant, dimension and
// allowance, per minute, with hour and day roll-ups. A summary covering several seconds is split across the
// minutes it crosses in proportion to its seconds in each (splitAcrossMinutes).
//
// At 50,000 active tenants this reads 50,000 summaries a second. On PostgreSQL it runs in a worker thread of its
// own (workerProjections.ts); elsewhere in the thread that admits, where the following matters most: a page's events
// come as JSON text where the ledger holds text (readsDataAsJson) and each is parsed when its turn comes, so
// only one event's summaries are alive at a time; a summary is read from its row by column and added to its
// row of the read model without an object made for it (summaryColumns, RollupRows.addValues), and a page
// yields the event loop every 1,000 summaries, so admissions never wait long on it. A summary reference (nearly
// every event) is read in place from its columns, its tenant's shard kept by its position in the key source
// (SummaryKeySources.decodedOf, SourceShardHashes).
//
// The newest minute and the one before are held open (src/metrics/trends/openMinutes.ts): a page rewrites their
// packed rows (64 rows of arrays, not a row per tenant) and writes a minute to the minute table once, when it
// closes. At 100,000 active tenants a live page's upsert of a row per tenant cost PostgreSQL 0.8-1.2 s every 2 s.
//
// An event with a summary outside the bounds of summaryBounds.ts (a span over a day, a start outside 1970..9999,
// or more than MAX_EVENT_MINUTE_ROWS minute rows in all) is refused whole before any of it is added: the runner
// sets it aside in the quarantine (src/ledger/quarantine.ts) and the page goes on.
import { setImmediate as yieldTurn } from 'node:timers/promises';
import type { Tx } from '../src/db/db.ts';
import type { RecordedEvent, Projection, AdmissionsRecordedData, Refusal } from '../src/ledger/index.ts';
import { COUNT_FIELDS, entriesOf, eventData, forEachEntry, KEY_FIELDS, lookUpSummaryEvent, SHADOW_QUOTA_ADMISSION_FIELDS, summaryColumns, SummaryKeySources, type DecodedSummaryRefs } from '../src/ledger/index.ts';
import {
  ADMISSION_TRENDS,
  familyTables,
  OpenMinutes,
  RollupRows,
  rollUpMinutes,
  SourceShardHashes,
  splitAcrossMinutes,
  summariesProblem,
  wholeCount,
} from '../src/metrics/index.ts';

/**
 * Events per page. A page writes each minute it closes once and rewrites the open minutes' packed rows once,
 * however many seconds it holds, so a projection catching up writes less the more seconds a page spans: at
 * 50,000 active tenants an event holds 4,000 summaries, and 256 events are about 20 s of traffic, where 32 were
 * 2.5 s (a rebuild of that traffic measured 2.3x faster). Events written as references
 * (src/ledger/catalog/summaryRefs.ts) are a few hundred bytes; a page of tables of the older shape (up to 512 KiB
 * each) is read as text and parsed one event at a time.
 */
const PAGE_EVENTS = 256;

/**
 * Catching up (a restart after an outage, a rebuild), a page reads on while its events are small: at 50,000
 * active tenants a page of summary references is about 20 s of traffic per read, and each page rewrites the open
 * minutes' packed rows. Sixteen reads are up to five minutes of that traffic in one page; the page stops at 8 MiB
 * of event text, so tables of the older shape (up to 512 KiB each) still go one read a page.
 */
const CATCH_UP = { reads: 16, bytes: 8 * 1024 * 1024 };

/**
 * Live summaries are applied every 2 s: a page rewrites the open minutes' packed rows once whatever the number
 * of seconds merged into them, half as often as a page a second would.
 */
const LIVE_PACE_MS = 2_000;

/** Summaries added per turn of the event loop (about a millisecond of work). */
const SLICE_SUMMARIES = 1_000;

export const admissionTrendsProjection: Projection = {
  name: 'admission-trends',
  version: 1,
  eventTypes: ['AdmissionsRecorded'],
  tables: familyTables(ADMISSION_TRENDS),
  pageSize: PAGE_EVENTS,
  catchUp: CATCH_UP,
  livePaceMs: LIVE_PACE_MS,
  // Each event parsed when its turn comes (see addAdmissions), not a page of them at once.
  readsDataAsJson: true,
  apply: async (event: RecordedEvent, tx: Tx) => {
    const refusals = await applyAdmissions([event], tx);
    return refusals.length > 0 ? { refused: refusals[0]!.reason } : undefined;
  },
  // A page's summaries in one upsert, merged per row (RollupRows).
  applyPage: (events: readonly RecordedEvent[], tx: Tx) => applyAdmissions(events, tx),
  // Minutes into hours and days once they are past, after the page has committed: at 50,000 active tenants that is
  // 100,000 row updates a minute, and in the page it held the live events back 2 s more (upsertRollups.ts).
  afterPages: async (db) => {
    await rollUpMinutes(db, ADMISSION_TRENDS);
  },
};

/**
 * Rows of minutes that are not open merged before some are written: past FLUSH_ROWS (about 20 MB) they are
 * written (a statement of the page's transaction; each sees the ones before, so the roll-ups stay exact), so the
 * page's memory stays bounded whatever it holds. Catching up, a minute closes as the next but one begins, and
 * its rows (every active tenant's) come here.
 */
const FLUSH_ROWS = 100_000;

/** The newest minutes, held and written packed (openMinutes.ts). */
const open = new OpenMinutes(ADMISSION_TRENDS);

/** Adds the events' summaries, refusing each event with a summary outside the bounds (summaryBounds.ts). */
async function applyAdmissions(events: readonly RecordedEvent[], tx: Tx): Promise<Refusal[]> {
  const refusals: Refusal[] = [];
  await open.begin(tx);
  const page: Page = { rows: new RollupRows(ADMISSION_TRENDS), nowSeconds: Math.floor(Date.now() / 1000) };
  for (const event of events) {
    const reason = await addAdmissions(page, event, tx);
    if (reason !== undefined) refusals.push({ event, reason });
    for (const closed of open.takeClosed()) page.rows.absorb(closed);
    if (page.rows.size >= FLUSH_ROWS) {
      await page.rows.upsert(tx);
      page.rows = new RollupRows(ADMISSION_TRENDS);
    }
  }
  open.closeDue();
  for (const closed of open.takeClosed()) page.rows.absorb(closed);
  await page.rows.upsert(tx);
  await open.write(tx);
  return refusals;
}

/** What a page adds to: the rows of minutes not open, and the clock that tells how far ahead a minute may be open. */
interface Page {
  rows: RollupRows;
  nowSeconds: number;
}

// The summary fields read, in the order addSummary takes them: the table's own columns.
const READ = SHADOW_QUOTA_ADMISSION_FIELDS;
const FROM_SECOND = READ.indexOf('fromSecond');
const SECONDS = READ.indexOf('seconds');

/**
 * The key sources read so far (src/ledger/catalog/summaryRefs.ts): an event that refers to an earlier one for
 * its keys is expanded from it, or from the ledger when this reader started after it (read with the page's
 * transaction: the read models live in the ledger's database).
 */
const keySources = new SummaryKeySources();

/** Adds an event's summaries to the page; or, when one lies outside the bounds, adds none and answers why. */
async function addAdmissions(page: Page, event: RecordedEvent, tx: Tx): Promise<string | undefined> {
  const stored = eventData(event) as AdmissionsRecordedData;
  keySources.remember(event.id, stored);
  const data = await keySources.decodedOf(stored, (eventId) => lookUpSummaryEvent(tx, eventId));
  if (typeof data === 'string') return data;
  if ('positions' in data) return addDecoded(page, data);
  const table = summaryColumns(data, READ);
  if (table === null) {
    // Events written before summaries were tables: a list of objects.
    const entries = entriesOf(data);
    const reason = summariesProblem(entries.length, (index) => entries[index]!.fromSecond, (index) => entries[index]!.seconds);
    if (reason !== undefined) return reason;
    forEachEntry(data, (entry) => addSummary(page, READ.map((field) => entry[field])));
    await yieldTurn();
    return undefined;
  }
  const { columns } = table;
  const fromColumn = columns[FROM_SECOND]!;
  const secondsColumn = columns[SECONDS]!;
  const cell = (index: number, column: number) => {
    const row = table.rows[index];
    return column < 0 || !Array.isArray(row) ? undefined : row[column];
  };
  const reason = summariesProblem(table.rows.length, (index) => cell(index, fromColumn), (index) => cell(index, secondsColumn));
  if (reason !== undefined) return reason;
  for (let start = 0; start < table.rows.length; start += SLICE_SUMMARIES) {
    const end = Math.min(table.rows.length, start + SLICE_SUMMARIES);
    for (let index = start; index < end; index++) {
      const row = table.rows[index];
      if (!Array.isArray(row)) continue;
      for (let field = 0; field < columns.length; field++) values[field] = columns[field]! < 0 ? undefined : row[columns[field]!];
      addSummary(page, values);
    }
    await yieldTurn();
  }
  return undefined;
}

/**
 * The summaries of a reference (nearly every event: src/ledger/catalog/summaryRefs.ts), read in place from its
 * columns, each tenant's shard found by its position in the source (SourceShardHashes); as addAdmissions.
 */
async function addDecoded(page: Page, decoded: DecodedSummaryRefs): Promise<string | undefined> {
  const { source, positions, columns } = decoded;
  const fromColumn = columns[REF_FROM_SECOND]!;
  const secondsColumn = columns[REF_SECONDS]!;
  const reason = summariesProblem(positions.length, (index) => fromColumn[index], (index) => secondsColumn[index]);
  if (reason !== undefined) return reason;
  const hashes = shardHashes.of(source);
  // A reference carries the ADMISSION_FIELDS counts only (a summary with shadow or quota counts is written in a table).
  for (let field = KEY_FIELDS.length + COUNT_FIELDS.length; field < values.length; field++) values[field] = undefined;
  for (let start = 0; start < positions.length; start += SLICE_SUMMARIES) {
    const end = Math.min(positions.length, start + SLICE_SUMMARIES);
    for (let index = start; index < end; index++) {
      const position = positions[index]!;
      values[0] = source.tenantId[position];
      values[1] = source.dimension[position];
      values[2] = source.allowance[position];
      for (let column = 0; column < columns.length; column++) values[KEY_FIELDS.length + column] = columns[column]![index];
      addSummary(page, values, SourceShardHashes.hashOf(hashes, source, position));
    }
    await yieldTurn();
  }
  return undefined;
}

/** Where a reference's fromSecond and seconds are among its columns (COUNT_FIELDS' order). */
const REF_FROM_SECOND = COUNT_FIELDS.indexOf('fromSecond');
const REF_SECONDS = COUNT_FIELDS.indexOf('seconds');

/** The shard hashes of the key sources' tenants, by position (openRows.ts). */
const shardHashes = new SourceShardHashes();

// Reused for every summary (addValues copies what it keeps): a summary's values in READ order, and its key
// and counts in ADMISSION_TRENDS' order.
const values: unknown[] = new Array<unknown>(READ.length);
const keys: string[] = ['', '', ''];
const counts: number[] = new Array<number>(ADMISSION_TRENDS.counts.length).fill(0);

function addSummary(page: Page, summary: readonly unknown[], shardHash?: number): void {
  const fromSecond = summary[3] as number;
  const seconds = wholeCount(summary[4]);
  keys[0] = summary[0] as string;
  keys[1] = summary[1] as string;
  keys[2] = (summary[2] as string | null) ?? '';
  for (let count = 0; count < 8; count++) counts[count] = wholeCount(summary[5 + count]);
  counts[8] = Math.min(wholeCount(summary[13]), Math.max(1, seconds));
  counts[9] = wholeCount(summary[14]);
  counts[10] = wholeCount(summary[15]);
  counts[11] = wholeCount(summary[16]);
  counts[12] = wholeCount(summary[17]);
  // Nearly every summary covers one second, within one minute: no split to make.
  const minuteStart = Math.floor(fromSecond / 60) * 60;
  if (Number.isFinite(fromSecond) && fromSecond + Math.max(1, seconds) <= minuteStart + 60) {
    addValues(page, minuteStart, counts, shardHash);
    return;
  }
  const whole = Object.fromEntries(ADMISSION_TRENDS.counts.map((name, index) => [name, counts[index]!]));
  for (const piece of splitAcrossMinutes(fromSecond, seconds, whole)) {
    addValues(
      page,
      piece.minuteStart,
      ADMISSION_TRENDS.counts.map((name) => piece.counts[name]!),
      shardHash,
    );
  }
}

/** A minute of `keys`' counts, to its open minute, or to the page's rows when that minute is not open. */
function addValues(page: Page, minuteStart: number, minuteCounts: readonly number[], shardHash?: number): void {
  if (!open.add(keys, minuteStart, minuteCounts, page.nowSeconds, shardHash)) page.rows.addValues(keys, minuteStart, minuteCounts);
}
