import { describe, expect, it } from 'vitest';
import { MAX_FORGIVEN_PACE_SECONDS, projectionReadiness } from '../../../src/ledger/projectionReadiness.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { admissionDemandProjection } from '../../../projections/admissionDemand.ts';
import { allProjections } from '../../../projections/index.ts';
import type { ProjectionLag } from '../../../src/ledger/projectionRunner.ts';

const lag = (projection: string, secondsBehind: number): ProjectionLag => ({
  projection,
  pending: secondsBehind > 0,
  secondsBehind,
  checkpoint: 'start',
});

describe('projection readiness', () => {
  it('is ready when caught up, and unready when the oldest event still to apply is too old', async () => {
    let lags = [lag('tiers', 0), lag('tenants', 0)];
    const check = projectionReadiness(async () => lags, 30);
    expect(await check()).toBeNull();
    lags = [lag('tiers', 29), lag('tenants', 0)];
    expect(await check()).toBeNull();
    lags = [lag('tiers', 31), lag('tenants', 45.4)];
    expect(await check()).toBe('projections behind: tiers 31s, tenants 45s');
    lags = [lag('tiers', 0), lag('tenants', 0)];
    expect(await check()).toBeNull();
  });

  it('does not count the pace of a paced projection against the bound', async () => {
    const paced = (secondsBehind: number): ProjectionLag => ({ ...lag('admission-trends', secondsBehind), paceSeconds: 2 });
    let lags = [paced(31.5)];
    const check = projectionReadiness(async () => lags, 30);
    expect(await check()).toBeNull();
    lags = [paced(32.5)];
    expect(await check()).toBe('projections behind: admission-trends 33s');
  });

  it("holds a projection with a bound of its own (readyLagSeconds) to it when it is the larger, and to the service's when not", async () => {
    const demand = (secondsBehind: number): ProjectionLag => ({ ...lag('admission-demand', secondsBehind), paceSeconds: 15, readyLagSeconds: 60 });
    // Its own bound, and the part of its pace readiness forgives.
    const readyUpTo = 60 + Math.min(15, MAX_FORGIVEN_PACE_SECONDS);
    let lags = [demand(readyUpTo - 0.5), lag('tiers', 4)];
    const check = projectionReadiness(async () => lags, 5);
    expect(await check()).toBeNull();
    lags = [demand(readyUpTo + 0.5), lag('tiers', 4)];
    expect(await check()).toBe(`projections behind: admission-demand ${readyUpTo + 1}s`);
    // A service bound larger than the projection's own is the one that counts.
    const roomy = projectionReadiness(async () => [{ ...lag('admission-demand', 100), readyLagSeconds: 60 }], 120);
    expect(await roomy()).toBeNull();
  });

  it('forgives at most MAX_FORGIVEN_PACE_SECONDS of a pace, however slow a projection says it is paced', async () => {
    const slow = (secondsBehind: number): ProjectionLag => ({ ...lag('slow', secondsBehind), paceSeconds: 3_600 });
    let lags = [slow(30 + MAX_FORGIVEN_PACE_SECONDS - 0.5)];
    const check = projectionReadiness(async () => lags, 30);
    expect(await check()).toBeNull();
    lags = [slow(30 + MAX_FORGIVEN_PACE_SECONDS + 0.5)];
    expect(await check()).toBe(`projections behind: slow ${30 + MAX_FORGIVEN_PACE_SECONDS + 1}s`);
  });

  it('every paced projection paces within what readiness forgives, or has a bound of its own past its pace (admission-demand)', () => {
    const paced = allProjections().filter((projection) => projection.livePaceMs !== undefined);
    expect(paced.map((projection) => [projection.name, projection.livePaceMs])).toEqual([
      [admissionTrendsProjection.name, 2_000],
      [admissionDemandProjection.name, 15_000],
    ]);
    expect(admissionTrendsProjection.livePaceMs! / 1_000).toBeLessThanOrEqual(MAX_FORGIVEN_PACE_SECONDS);
    for (const projection of paced) {
      const paceSeconds = projection.livePaceMs! / 1_000;
      expect(paceSeconds <= MAX_FORGIVEN_PACE_SECONDS || (projection.readyLagSeconds ?? 0) >= paceSeconds).toBe(true);
    }
  });
});

describe('projection readiness over time', () => {
  it('tells a projection catching up (its lag falling) from one that is stuck (its lag not falling)', async () => {
    let clock = 0;
    let lags = [lag('admission-trends', 600), lag('tiers', 100)];
    const check = projectionReadiness(async () => lags, 30, () => clock);
    expect(await check()).toBe('projections behind: admission-trends 600s, tiers 100s');
    // 10 s later: admission-trends applied 50 s of the ledger in 10 s; tiers applied nothing.
    clock = 10_000;
    lags = [lag('admission-trends', 560), lag('tiers', 110)];
    expect(await check()).toBe('projections behind: admission-trends 560s (catching up at 5.0x real time, about 140s left), tiers 110s (not catching up: 0.0x real time)');
    // Caught up, then behind again: no rate from before it caught up.
    lags = [lag('admission-trends', 0), lag('tiers', 0)];
    expect(await check()).toBeNull();
    clock = 20_000;
    lags = [lag('admission-trends', 40), lag('tiers', 0)];
    expect(await check()).toBe('projections behind: admission-trends 40s');
  });
});
