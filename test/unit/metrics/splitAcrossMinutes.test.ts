import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { splitAcrossMinutes } from '../../../src/metrics/trends/splitAcrossMinutes.ts';
import { eventRowsProblem, MAX_EVENT_MINUTE_ROWS, MAX_SUMMARY_SECONDS, minutesCrossed, summarySpanProblem } from '../../../src/metrics/trends/summaryBounds.ts';

describe('splitAcrossMinutes', () => {
  it('keeps a summary inside one minute whole', () => {
    expect(splitAcrossMinutes(120 + 5, 10, { units: 7, hits: 3 })).toEqual([{ minuteStart: 120, counts: { units: 7, hits: 3 } }]);
  });

  it('splits a merged summary across minutes in proportion to its seconds in each', () => {
    // 30 s in minute 0 (30..59) and 60 s in minute 60 and 30 s in minute 120: shares 1/4, 1/2, 1/4.
    expect(splitAcrossMinutes(30, 120, { units: 400, hits: 8 })).toEqual([
      { minuteStart: 0, counts: { units: 100, hits: 2 } },
      { minuteStart: 60, counts: { units: 200, hits: 4 } },
      { minuteStart: 120, counts: { units: 100, hits: 2 } },
    ]);
  });

  it('never loses or invents a unit, and never gives a minute more hits than seconds it covers', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 1, max: 4_000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (fromSecond, seconds, units, hitShare) => {
          const hits = Math.floor(seconds * hitShare);
          const pieces = splitAcrossMinutes(fromSecond, seconds, { units, hits });
          expect(pieces.reduce((sum, piece) => sum + piece.counts.units, 0)).toBe(units);
          expect(pieces.reduce((sum, piece) => sum + piece.counts.hits, 0)).toBe(hits);
          for (const piece of pieces) {
            expect(Number.isInteger(piece.counts.units)).toBe(true);
            const covered = Math.min(fromSecond + seconds, piece.minuteStart + 60) - Math.max(fromSecond, piece.minuteStart);
            expect(piece.counts.hits).toBeLessThanOrEqual(covered);
          }
        },
      ),
    );
  });

  it('refuses to split a span longer than MAX_SUMMARY_SECONDS (callers check first; this is the last line)', () => {
    expect(splitAcrossMinutes(0, MAX_SUMMARY_SECONDS, { units: 1 })).toHaveLength(1_440);
    expect(() => splitAcrossMinutes(0, MAX_SUMMARY_SECONDS + 1, { units: 1 })).toThrow(RangeError);
    expect(() => splitAcrossMinutes(0, 1e12, { units: 1 })).toThrow('a summary spans 1000000000000 s, more than the 86400 s a trend splits across minutes');
  });

  it('bounds summaries: a day at most, from 1970 to 9999, and counts the minute rows a span crosses', () => {
    expect(summarySpanProblem(0, MAX_SUMMARY_SECONDS)).toBeUndefined();
    expect(summarySpanProblem(Number.NaN, 1)).toBeUndefined();
    expect(summarySpanProblem(0, 1_763_000_000)).toBe('a summary spans 1763000000 s, more than the 86400 s a trend splits across minutes');
    expect(summarySpanProblem(-1, 1)).toMatch(/outside 0\.\.253402300799/);
    expect(summarySpanProblem(253_402_300_800, 1)).toMatch(/outside 0\.\.253402300799/);
    expect(minutesCrossed(30, 1)).toBe(1);
    expect(minutesCrossed(59, 2)).toBe(2);
    expect(minutesCrossed(0, 0)).toBe(1);
    expect(minutesCrossed(0, MAX_SUMMARY_SECONDS)).toBe(1_440);
    expect(minutesCrossed(1, MAX_SUMMARY_SECONDS)).toBe(1_441);
    expect(minutesCrossed(Number.NaN, 5)).toBe(0);
    expect(eventRowsProblem(MAX_EVENT_MINUTE_ROWS)).toBeUndefined();
    expect(eventRowsProblem(MAX_EVENT_MINUTE_ROWS + 1)).toMatch(/more than the 500000 an event may/);
  });

  it('attributes nothing when the summary has no place in time', () => {
    expect(splitAcrossMinutes(Number.NaN, 1, { units: 5 })).toEqual([]);
  });
});
