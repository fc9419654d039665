// Read model: admitted, shed, rejected and unauthenticated units and messages and limit hits per tenant, dimension and
// allowance, per minute, with hour and day roll-ups. A summary covering several seconds is split across the
// minutes it crosses in proportion to its seconds in each (splitAcrossMinutes).
//
// At 50,000 active tenants this reads 50,000 summaries a second, in the process that admits: a summary is
// added to its row without an object made for it (forEachEntry, RollupRows.addValues), and a page yields
// the event loop after each event (at most a few thousand summaries), so admissions never wait long on it.
import type { Tx } from '../src/db/db.ts';
import type { RecordedEvent, Projection, AdmissionsRecordedData } from '../src/ledger/index.ts';
import { forEachEntry } from '../src/ledger/index.ts';
import { ADMISSION_TRENDS, familyTables, RollupRows, splitAcrossMinutes, wholeCount } from '../src/metrics/index.ts';

/** Events per page: each carries up to a few thousand summaries, so a page stays a few seconds of traffic. */
const PAGE_EVENTS = 32;

/**
 * Live summaries are applied every 2 s: a page writes each tenant's minute once whatever the number of
 * seconds merged into it, so at 50,000 active tenants this halves the trend writes against a page a second.
 */
const LIVE_PACE_MS = 2_000;

const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export const admissionTrendsProjection: Projection = {
  name: 'admission-trends',
  version: 1,
  eventTypes: ['AdmissionsRecorded'],
  tables: familyTables(ADMISSION_TRENDS),
  pageSize: PAGE_EVENTS,
  livePaceMs: LIVE_PACE_MS,
  apply: (event: RecordedEvent, tx: Tx) => {
    const rows = new RollupRows(ADMISSION_TRENDS);
    addAdmissions(rows, event);
    return rows.upsert(tx);
  },
  // A page's summaries in one upsert, merged per row (RollupRows).
  applyPage: async (events: readonly RecordedEvent[], tx: Tx) => {
    const rows = new RollupRows(ADMISSION_TRENDS);
    for (const event of events) {
      addAdmissions(rows, event);
      await yieldTurn();
    }
    await rows.upsert(tx);
  },
};

// In ADMISSION_TRENDS' key and count order; reused for every summary (addValues copies them).
const keys: string[] = ['', '', ''];
const counts: number[] = new Array<number>(ADMISSION_TRENDS.counts.length).fill(0);

function addAdmissions(rows: RollupRows, event: RecordedEvent): void {
  forEachEntry(event.data as AdmissionsRecordedData, (entry) => {
    const seconds = wholeCount(entry.seconds);
    const fromSecond = entry.fromSecond;
    keys[0] = entry.tenantId;
    keys[1] = entry.dimension;
    keys[2] = entry.allowance ?? '';
    counts[0] = wholeCount(entry.admittedUnits);
    counts[1] = wholeCount(entry.admittedMessages);
    counts[2] = wholeCount(entry.shedUnits);
    counts[3] = wholeCount(entry.shedMessages);
    counts[4] = wholeCount(entry.rejectedUnits);
    counts[5] = wholeCount(entry.rejectedMessages);
    counts[6] = wholeCount(entry.unauthenticatedUnits);
    counts[7] = wholeCount(entry.unauthenticatedMessages);
    counts[8] = Math.min(wholeCount(entry.hitSeconds), Math.max(1, seconds));
    // Nearly every summary covers one second, within one minute: no split to make.
    const minuteStart = Math.floor(fromSecond / 60) * 60;
    if (Number.isFinite(fromSecond) && fromSecond + Math.max(1, seconds) <= minuteStart + 60) {
      rows.addValues(keys, minuteStart, counts);
      return;
    }
    const whole = Object.fromEntries(ADMISSION_TRENDS.counts.map((name, index) => [name, counts[index]!]));
    for (const piece of splitAcrossMinutes(fromSecond, seconds, whole)) {
      rows.addValues(
        keys,
        piece.minuteStart,
        ADMISSION_TRENDS.counts.map((name) => piece.counts[name]!),
      );
    }
  });
}
