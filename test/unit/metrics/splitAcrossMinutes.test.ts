import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { splitAcrossMinutes } from '../../../src/metrics/trends/splitAcrossMinutes.ts';

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

  it('attributes nothing when the summary has no place in time', () => {
    expect(splitAcrossMinutes(Number.NaN, 1, { units: 5 })).toEqual([]);
  });
});
