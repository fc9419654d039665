import { describe, expect, it } from 'vitest';
import { projectionReadiness } from '../../../src/ledger/projectionReadiness.ts';
import type { ProjectionLag } from '../../../src/ledger/projectionRunner.ts';

const lag = (projection: string, eventsBehind: number, secondsBehind = 0): ProjectionLag => ({
  projection,
  eventsBehind,
  eventsBehindIsLowerBound: false,
  secondsBehind,
  checkpoint: 'start',
});

describe('projection readiness', () => {
  it('is ready when caught up, and unready when the oldest unprojected event is too old', async () => {
    let lags = [lag('tiers', 0)];
    const check = projectionReadiness(async () => lags, 30, () => 0);
    expect(await check()).toBeNull();
    lags = [lag('tiers', 5, 31)];
    expect(await check()).toBe('projections behind: tiers 31s');
  });

  it('is unready when events have been held back for longer than the bound, though they report no age', async () => {
    let nowMs = 0;
    let lags = [lag('tenants', 1, 0)];
    const check = projectionReadiness(async () => lags, 30, () => nowMs);
    expect(await check()).toBeNull();
    nowMs = 29_000;
    expect(await check()).toBeNull();
    nowMs = 31_000;
    expect(await check()).toBe('projections behind: tenants 31s');
    lags = [lag('tenants', 0)];
    expect(await check()).toBeNull();
    lags = [lag('tenants', 1, 0)];
    nowMs = 32_000;
    expect(await check()).toBeNull();
  });
});
