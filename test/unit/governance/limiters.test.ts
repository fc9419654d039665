import { describe, expect, it } from 'vitest';
import { stableCallerFraction, TokenBucket } from '../../../src/governance/index.ts';
import { FixedWindow } from '../../../src/governance/fixedWindow.ts';

describe('TokenBucket', () => {
  it('starts full, takes weighted costs all or nothing, refills by the given time', () => {
    const bucket = new TokenBucket();
    const t0 = 1_700_000_000_000;
    expect(bucket.take(1500, t0, 1000, 2000)).toBe(true);
    expect(bucket.take(600, t0, 1000, 2000)).toBe(false);
    expect(bucket.remaining()).toBe(500);
    expect(bucket.retryAfterSeconds(600, 1000, 2000)).toBe(1);
    expect(bucket.take(600, t0 + 100, 1000, 2000)).toBe(true); // 100 ms refilled 100 tokens
    expect(bucket.take(10_000, t0 + 60_000, 1000, 2000)).toBe(false); // never more than the burst
    expect(bucket.retryAfterSeconds(10_000, 1000, 2000)).toBe(1);
  });

  it('ignores instants earlier than the last one and caps at a lowered burst', () => {
    const bucket = new TokenBucket();
    bucket.take(2000, 10_000, 1000, 2000);
    expect(bucket.take(1, 5_000, 1000, 2000)).toBe(false);
    bucket.take(0, 20_000, 1000, 2000);
    expect(bucket.take(0, 19_000, 1000, 100)).toBe(true);
    expect(bucket.remaining()).toBe(100);
  });
});

describe('FixedWindow exact', () => {
  it('admits up to the limit per one-second window and resets on the next', () => {
    const window = new FixedWindow();
    let admitted = 0;
    for (let i = 0; i < 150; i++) if (window.takeExact(1, 10, 100)) admitted++;
    expect(admitted).toBe(100);
    expect(window.retryAfterSeconds(10_400)).toBe(1);
    expect(window.takeExact(1, 11, 100)).toBe(true);
  });
});

describe('FixedWindow STABLE_DOWNSAMPLE', () => {
  const limit = 1000;
  const callers = Array.from({ length: 500 }, (_, i) => `session-${i}`);

  function run(windows: number, requestsPerCaller: (window: number) => number) {
    const window = new FixedWindow();
    const perWindow: { admitted: number; byCaller: Map<string, { in: number; out: number }> }[] = [];
    for (let w = 0; w < windows; w++) {
      const byCaller = new Map<string, { in: number; out: number }>();
      let admitted = 0;
      const rounds = requestsPerCaller(w);
      for (let round = 0; round < rounds; round++) {
        for (const caller of callers) {
          const ok = window.takeDownsampled(1, 100 + w, limit, stableCallerFraction(caller));
          const seen = byCaller.get(caller) ?? { in: 0, out: 0 };
          if (ok) seen.in++;
          else seen.out++;
          byCaller.set(caller, seen);
          if (ok) admitted++;
        }
      }
      perWindow.push({ admitted, byCaller });
    }
    return perWindow;
  }

  it('never admits more than twice the limit in a window', () => {
    for (const load of [1, 3, 10, 40]) {
      for (const { admitted } of run(6, () => load * 2)) expect(admitted).toBeLessThanOrEqual(2 * limit);
    }
  });

  it('keeps each caller wholly in or wholly out within a window once overloaded, near the limit', () => {
    const windows = run(10, () => 10); // 5,000 requests a window, 5x the limit
    for (const { admitted, byCaller } of windows.slice(1)) {
      for (const seen of byCaller.values()) expect(seen.in === 0 || seen.out === 0).toBe(true);
      expect(admitted).toBeGreaterThan(0.7 * limit);
      expect(admitted).toBeLessThanOrEqual(2 * limit);
    }
  });

  it('admits everyone under the limit', () => {
    for (const { admitted } of run(3, () => 1)) expect(admitted).toBe(callers.length);
  });
});
