import { describe, expect, it } from 'vitest';
import { addQuotaHeaders, quotaResetSeconds, type Quota } from '../../../src/http-server/rateLimitHeaders.ts';

const quota = (policy: string, limit: number, remaining: number, burst: number): Quota => ({ policy, limit, remaining, burst });

function fields(first: Quota, second: Quota | null): Record<string, string> {
  const headers: string[] = [];
  addQuotaHeaders(headers, first, second);
  return { [headers[0]!]: headers[1]!, [headers[2]!]: headers[3]! };
}

describe('RateLimit fields of an admitted answer', () => {
  it('names each charge: q the per-second limit, r what is left (whole), t the seconds until the bucket is full again', () => {
    expect(fields(quota('tenant-messages', 20, 18.6, 20), quota('tenant-readings', 20, 4, 20))).toEqual({
      'RateLimit-Policy': '"tenant-messages";q=20;w=1, "tenant-readings";q=20;w=1',
      RateLimit: '"tenant-messages";r=18;t=1, "tenant-readings";r=4;t=1',
    });
    expect(fields(quota('tenant-uplinks', 10, 4, 10), null)).toEqual({ 'RateLimit-Policy': '"tenant-uplinks";q=10;w=1', RateLimit: '"tenant-uplinks";r=4;t=1' });
  });

  it('t is 0 for a full bucket, rounds up, and stays within a day whatever the numbers', () => {
    expect(quotaResetSeconds(5, 10, 10)).toBe(0);
    expect(quotaResetSeconds(5, 0, 10)).toBe(2);
    expect(quotaResetSeconds(5, 9.5, 10)).toBe(1);
    expect(quotaResetSeconds(1, 0, 1_000_000)).toBe(86_400);
    expect(quotaResetSeconds(0, 0, 10)).toBe(0);
    expect(quotaResetSeconds(Number.NaN, 0, 10)).toBe(0);
  });

  it('answers right from the kept fields: every set of numbers, whichever slot it shares, gets its own field', () => {
    // More distinct sets than the fields kept, twice over: each answer is checked against the one made anew.
    for (let round = 0; round < 2; round++) {
      for (let remaining = 0; remaining < 3_000; remaining += 7) {
        const messages = quota(round === 0 ? 'tenant-messages' : 'overflow-messages', 100, remaining % 100, 100);
        const readings = quota('tenant-readings', 100, remaining, 5_000);
        const expected = `"${messages.policy}";r=${remaining % 100};t=${quotaResetSeconds(100, remaining % 100, 100)}, "tenant-readings";r=${remaining};t=${quotaResetSeconds(100, remaining, 5_000)}`;
        expect(fields(messages, readings).RateLimit).toBe(expected);
      }
    }
  });
});
