// What the trend projections will split across minutes (splitAcrossMinutes), documented in src/metrics/README.md
// ("Trends"). A summary's span costs one read-model row per minute it crosses: a summary that spanned 56 years
// (two MQTT messages, one with a send time of 1970, merged into one) made 30 million rows and ended the thread
// that applied it, on every restart. So each projection checks an event's summaries against these bounds
// before it applies any of them, and refuses an event outside them: the runner sets it aside in the quarantine
// (src/ledger/quarantine.ts) and goes on.
import { wholeCount } from './wholeCount.ts';

/**
 * The longest span a summary may cover: a day (1,441 minute rows at most). The Governor's summaries cover one
 * second, or the seconds a recorder outage merged; the leasing clients' cover a lease's period.
 */
export const MAX_SUMMARY_SECONDS = 86_400;

/** The latest first second a summary may name: 9999-12-31T23:59:59Z. The earliest is 0 (1970). */
export const MAX_SUMMARY_FROM_SECOND = 253_402_300_799;

/**
 * The most minute rows the summaries of one event may cross together. The largest event (MAX_APPEND_BYTES, about
 * 8,700 summaries) passes with summaries of up to 57 minutes each, as a recorder outage of an hour makes them.
 * Writing rows costs about 16,000 a second on PostgreSQL and 5,500 on PGlite (measured by
 * test/integration/projections/summaryBounds.test.ts on a loaded machine): so an event costs at most about
 * 30 s of PostgreSQL's work, in statements of at most 400,000 rows (the admission trends' MAX_ROWS).
 */
export const MAX_EVENT_MINUTE_ROWS = 500_000;

/**
 * Why a summary's span lies outside the bounds, or undefined when it lies within them. A fromSecond that is not
 * a number at all is within them: such a summary has no place in time and is attributed to no minute
 * (splitAcrossMinutes), as before.
 */
export function summarySpanProblem(fromSecond: unknown, seconds: number): string | undefined {
  if (seconds > MAX_SUMMARY_SECONDS) return `a summary spans ${seconds} s, more than the ${MAX_SUMMARY_SECONDS} s a trend splits across minutes`;
  if (typeof fromSecond !== 'number' || !Number.isFinite(fromSecond)) return undefined;
  if (fromSecond < 0 || fromSecond > MAX_SUMMARY_FROM_SECOND) {
    return `a summary starts at second ${fromSecond}, outside 0..${MAX_SUMMARY_FROM_SECOND} (1970 to 9999)`;
  }
  return undefined;
}

/** The minute rows a span within the bounds crosses (0 for one with no place in time). */
export function minutesCrossed(fromSecond: unknown, seconds: number): number {
  if (typeof fromSecond !== 'number' || !Number.isFinite(fromSecond)) return 0;
  const first = Math.floor(fromSecond / 60);
  const last = Math.floor((fromSecond + Math.max(1, Math.floor(seconds)) - 1) / 60);
  return last - first + 1;
}

/** Why an event whose summaries cross `rows` minute rows is refused, or undefined. */
export function eventRowsProblem(rows: number): string | undefined {
  return rows > MAX_EVENT_MINUTE_ROWS ? `its summaries cross ${rows} minute rows, more than the ${MAX_EVENT_MINUTE_ROWS} an event may` : undefined;
}

/**
 * Why an event's summaries (`count` of them, read by index) lie outside the bounds, or undefined: the first
 * summary whose span does (named `<label> <index>`), else the minute rows they cross together.
 */
export function summariesProblem(
  count: number,
  fromSecondAt: (index: number) => unknown,
  secondsAt: (index: number) => unknown,
  label = 'summary',
): string | undefined {
  let minuteRows = 0;
  for (let index = 0; index < count; index++) {
    const fromSecond = fromSecondAt(index);
    const seconds = wholeCount(secondsAt(index));
    const problem = summarySpanProblem(fromSecond, seconds);
    if (problem !== undefined) return `${label} ${index}: ${problem}`;
    minuteRows += minutesCrossed(fromSecond, seconds);
  }
  return eventRowsProblem(minuteRows);
}
