// A summary usually covers one second. When a slow recorder merged windows it covers `seconds` > 1 and
// may cross minute boundaries. We split it across the minutes it covers in proportion to the seconds it
// spent in each, and round with the largest-remainder method so every count's pieces are whole numbers
// that add up exactly to the original: no unit is lost or invented, and hits never exceed the seconds a
// piece covers.

import { MAX_SUMMARY_SECONDS } from './summaryBounds.ts';

export interface MinutePiece<Counts extends Record<string, number>> {
  minuteStart: number;
  counts: Counts;
}

export function splitAcrossMinutes<Counts extends Record<string, number>>(
  fromSecond: number,
  seconds: number,
  counts: Counts,
): MinutePiece<Counts>[] {
  // A span with no place in time cannot be attributed to any minute.
  if (!Number.isFinite(fromSecond)) return [];
  const span = Math.max(1, Math.floor(seconds));
  // Callers check their summaries first (summarySpanProblem) and refuse an event outside the bounds; this is the
  // last line, so that no caller can ever make a row per minute of decades. The runner quarantines what throws.
  if (span > MAX_SUMMARY_SECONDS) throw new RangeError(`a summary spans ${span} s, more than the ${MAX_SUMMARY_SECONDS} s a trend splits across minutes`);
  const end = fromSecond + span;
  const overlaps: Array<{ minuteStart: number; seconds: number }> = [];
  for (let minuteStart = Math.floor(fromSecond / 60) * 60; minuteStart < end; minuteStart += 60) {
    overlaps.push({ minuteStart, seconds: Math.min(end, minuteStart + 60) - Math.max(fromSecond, minuteStart) });
  }
  if (overlaps.length === 1) return [{ minuteStart: overlaps[0]!.minuteStart, counts }];

  const shares = overlaps.map((overlap) => overlap.seconds / span);
  const pieces = overlaps.map((overlap) => ({ minuteStart: overlap.minuteStart, counts: {} as Record<string, number> }));
  for (const [name, total] of Object.entries(counts)) {
    allocate(total, shares).forEach((part, i) => {
      pieces[i]!.counts[name] = part;
    });
  }
  return pieces as MinutePiece<Counts>[];
}

/** Whole-number parts of `total` proportional to `shares` (which sum to 1), summing exactly to `total`. */
function allocate(total: number, shares: readonly number[]): number[] {
  const exact = shares.map((share) => total * share);
  const parts = exact.map(Math.floor);
  let remaining = total - parts.reduce((sum, part) => sum + part, 0);
  const byRemainder = exact.map((value, i) => ({ i, remainder: value - Math.floor(value) })).sort((a, b) => b.remainder - a.remainder || a.i - b.i);
  for (const { i } of byRemainder) {
    if (remaining < 1) break;
    parts[i]! += 1;
    remaining -= 1;
  }
  return parts;
}
