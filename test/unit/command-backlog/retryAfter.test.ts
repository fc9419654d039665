import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_AFTER_SECONDS, MAX_RETRY_AFTER_SECONDS, nextDeliveryIntervalEwma, retryAfterSeconds } from '../../../src/command-backlog/retryAfter.ts';

const now = new Date('2026-01-01T00:01:00Z');
const secondsAgo = (seconds: number) => new Date(now.getTime() - seconds * 1_000);

describe('retryAfterSeconds', () => {
  it('falls back to the default before any delivery pace is known', () => {
    expect(retryAfterSeconds({ lastDeliveredAt: null, deliveryIntervalMsEwma: null }, now)).toBe(DEFAULT_RETRY_AFTER_SECONDS);
    expect(retryAfterSeconds({ lastDeliveredAt: secondsAgo(1), deliveryIntervalMsEwma: null }, now)).toBe(DEFAULT_RETRY_AFTER_SECONDS);
  });

  it('expects the next slot one mean delivery interval away, in whole seconds, at least 1', () => {
    expect(retryAfterSeconds({ lastDeliveredAt: now, deliveryIntervalMsEwma: 2_500 }, now)).toBe(3);
    expect(retryAfterSeconds({ lastDeliveredAt: now, deliveryIntervalMsEwma: 20 }, now)).toBe(1);
  });

  it('waits at least as long as delivery has already been quiet, up to a minute', () => {
    expect(retryAfterSeconds({ lastDeliveredAt: secondsAgo(12), deliveryIntervalMsEwma: 2_000 }, now)).toBe(12);
    expect(retryAfterSeconds({ lastDeliveredAt: secondsAgo(3_600), deliveryIntervalMsEwma: 2_000 }, now)).toBe(MAX_RETRY_AFTER_SECONDS);
  });
});

describe('nextDeliveryIntervalEwma', () => {
  it('starts at the first interval and moves a fifth of the way towards each new one', () => {
    expect(nextDeliveryIntervalEwma(null, 1_000)).toBe(1_000);
    expect(nextDeliveryIntervalEwma(1_000, 2_000)).toBe(1_200);
  });
});
