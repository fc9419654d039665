import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { BUCKET_SECONDS, decomposeRange } from '../../../src/metrics/trends/buckets.ts';

const DAY = 86_400;
const HOUR = 3_600;

describe('decomposeRange', () => {
  it('answers whole days from days, the hour edges from hours, the minute edges from minutes', () => {
    const from = 10 * DAY + 22 * HOUR + 30 * 60; // day 10, 22:30
    const to = 13 * DAY + 1 * HOUR + 15 * 60; // day 13, 01:15
    expect(decomposeRange(from, to)).toEqual([
      { bucket: 'MINUTE', fromSecond: from, toSecond: 10 * DAY + 23 * HOUR },
      { bucket: 'HOUR', fromSecond: 10 * DAY + 23 * HOUR, toSecond: 11 * DAY },
      { bucket: 'DAY', fromSecond: 11 * DAY, toSecond: 13 * DAY },
      { bucket: 'HOUR', fromSecond: 13 * DAY, toSecond: 13 * DAY + HOUR },
      { bucket: 'MINUTE', fromSecond: 13 * DAY + HOUR, toSecond: to },
    ]);
  });

  it('widens to whole minutes and uses minutes alone inside one hour', () => {
    expect(decomposeRange(HOUR + 61, HOUR + 119)).toEqual([{ bucket: 'MINUTE', fromSecond: HOUR + 60, toSecond: HOUR + 120 }]);
  });

  it('covers the widened range exactly, in order, each segment aligned to its bucket', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 800 * DAY }), fc.integer({ min: 1, max: 400 * DAY }), (from, length) => {
        const segments = decomposeRange(from, from + length);
        expect(segments[0]!.fromSecond).toBe(Math.floor(from / 60) * 60);
        expect(segments.at(-1)!.toSecond).toBe(Math.ceil((from + length) / 60) * 60);
        for (let i = 0; i < segments.length; i++) {
          const segment = segments[i]!;
          const size = BUCKET_SECONDS[segment.bucket];
          expect(segment.fromSecond % size).toBe(0);
          expect(segment.toSecond % size).toBe(0);
          expect(segment.toSecond).toBeGreaterThan(segment.fromSecond);
          if (i > 0) expect(segment.fromSecond).toBe(segments[i - 1]!.toSecond);
        }
        expect(segments.length).toBeLessThanOrEqual(5);
      }),
    );
  });
});
