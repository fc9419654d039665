import { describe, expect, it } from 'vitest';
import { createEdgeLimit } from '../../../../src/doors/pipeline/edgeLimit.ts';

describe('edge per-IP limit', () => {
  it('admits a burst per client, refuses past it with Retry-After from the bucket, and refills with time', () => {
    const edge = createEdgeLimit({ ratePerSecond: 2, burst: 2 });
    const t0 = 1_000_000;
    // Each decision is the limit's own record until the next call: read at once.
    expect([edge.admit('a', t0).admitted, edge.admit('a', t0).admitted, edge.admit('a', t0).admitted]).toEqual([true, true, false]);
    expect(edge.admit('a', t0)).toMatchObject({ admitted: false, limit: 2, remaining: 0, retryAfterSeconds: 1 });
    expect(edge.admit('b', t0).admitted).toBe(true);
    expect(edge.admit('a', t0 + 500).admitted).toBe(true);
  });

  it('stays within maxClients, keeping the state of clients that keep sending', () => {
    const edge = createEdgeLimit({ ratePerSecond: 1, burst: 1, maxClients: 4 });
    edge.admit('busy', 0);
    for (let i = 0; i < 10; i++) {
      const atMs = 2000 + i * 1000;
      edge.admit(`idle-${i}`, atMs);
      // 'busy' keeps sending, so it always survives the rotation: its spent bucket is not forgotten.
      expect(edge.admit('busy', atMs).admitted).toBe(true);
      expect(edge.admit('busy', atMs).admitted).toBe(false);
      expect(edge.clients).toBeLessThanOrEqual(4);
    }
    expect(edge.lossyEvictions).toBe(0);
  });

  it('counts a client dropped before its bucket refilled', () => {
    const edge = createEdgeLimit({ ratePerSecond: 1, burst: 1, maxClients: 2 });
    edge.admit('a', 0);
    edge.admit('b', 10);
    edge.admit('c', 20);
    expect(edge.lossyEvictions).toBe(1);
  });

  it('a million distinct clients never hold more than maxClients buckets', () => {
    const edge = createEdgeLimit({ ratePerSecond: 1000, maxClients: 10_000 });
    for (let i = 0; i < 1_000_000; i++) edge.admit(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, i);
    expect(edge.clients).toBe(10_000);
  });
});
