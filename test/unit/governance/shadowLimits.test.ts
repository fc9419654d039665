// Shadow limits in the governance library: which level's shadow watches a tenant (the cascade run on the
// shadows, platform defaults included), and the Governor deciding a shadow on every kind of charge it meters
// (a readings bucket, the per-message charge, a fixed window) while refusing nothing by it.
import { afterEach, describe, expect, it } from 'vitest';
import { Governor, resolveEffectiveLimits, resolveShadowLimit, TokenBucket } from '../../../src/governance/index.ts';
import type { AdmitRequest, Dimension } from '../../../src/governance/index.ts';
import { CollectingRecorder, MemoryLimitSource } from './memoryLimitSource.ts';

const T0 = 1_800_000_000_000;
let governors: Governor[] = [];

afterEach(async () => {
  await Promise.allSettled(governors.map((each) => each.close()));
  governors = [];
});

describe('resolveShadowLimit', () => {
  const shadow = (ratePerSecond: number) => ({ ratePerSecond: 100, shadow: { ratePerSecond } });

  it("watches a tenant with the shadow of the level that wins: an override's, its tier's, or the platform default's", () => {
    expect(resolveShadowLimit('INGEST', { override: { shadow: { ratePerSecond: 5, burst: 10 } }, tier: { ratePerSecond: 100 } })).toEqual({
      value: { ratePerSecond: 5, burst: 10 },
      source: 'TENANT_OVERRIDE',
    });
    expect(resolveShadowLimit('INGEST', { tier: shadow(7), platformDefault: shadow(3) })).toEqual({ value: { ratePerSecond: 7, burst: 14 }, source: 'TIER' });
    expect(resolveShadowLimit('INGEST', { platformDefault: shadow(3) })).toEqual({ value: { ratePerSecond: 3, burst: 6 }, source: 'PLATFORM_DEFAULT' });
    // A tier that sets the dimension governs the tenant: the platform default's shadow does not watch it.
    expect(resolveShadowLimit('INGEST', { tier: { ratePerSecond: 100 }, platformDefault: shadow(3) })).toBeUndefined();
  });

  it('resolves on API_REQUESTS (a fixed window), never on a count ceiling', () => {
    expect(resolveShadowLimit('API_REQUESTS', { platformDefault: shadow(5) })).toEqual({ value: { ratePerSecond: 5 }, source: 'PLATFORM_DEFAULT' });
    expect(resolveShadowLimit('UNDELIVERED_COMMANDS', { platformDefault: { ceiling: 100, shadow: { ceiling: 5 } } })).toBeUndefined();
  });

  it('reads the platform defaults handed over apart from the levels, as the enforced limit does', () => {
    const limits = resolveEffectiveLimits({ EGRESS: {} }, { EGRESS: { ratePerSecond: 100, burst: 200, shadow: { ratePerSecond: 5, burst: 10 } } });
    expect(limits.find((limit) => limit.dimension === 'EGRESS')).toEqual({
      dimension: 'EGRESS',
      value: { ratePerSecond: 100, burst: 200 },
      source: 'PLATFORM_DEFAULT',
      shadow: { value: { ratePerSecond: 5, burst: 10 }, source: 'PLATFORM_DEFAULT' },
    });
  });
});

describe('Governor: shadow limits on every kind of charge', () => {
  async function loaded(source: MemoryLimitSource) {
    const recorder = new CollectingRecorder();
    const gov = new Governor({ limitSource: source, now: () => T0, clockReadEveryAdmits: 1, recorder });
    governors.push(gov);
    gov.confirmTenant('acme');
    gov.admit({ tenant: 'acme', dimension: 'AI_INFERENCE', units: 0, at: T0 });
    await gov.loadsSettled();
    return { gov, recorder };
  }

  /** 20 charges a second for 10 s, evenly spaced; returns how many the Governor refused. */
  function send(gov: Governor, request: Omit<AdmitRequest, 'at' | 'units'>): number {
    let refused = 0;
    for (let i = 0; i < 200; i++) if (!gov.admit({ ...request, units: 1, at: T0 + i * 50 }).admitted) refused++;
    return refused;
  }

  /** What a bucket of the library alone refuses of the same 200 charges: by hand, 10 + 5 x 9.95 of them fit, about 141 do not. */
  function bucketRefuses(ratePerSecond: number, burst: number): number {
    const bucket = new TokenBucket();
    let refused = 0;
    for (let i = 0; i < 200; i++) if (!bucket.take(1, T0 + i * 50, ratePerSecond, burst)) refused++;
    return refused;
  }

  const shadowed = (recorder: CollectingRecorder, dimension: Dimension) => {
    const entries = recorder.admissions.filter((each) => each.dimension === dimension);
    return {
      units: entries.reduce((sum, each) => sum + (each.shadowLimitedUnits ?? 0), 0),
      messages: entries.reduce((sum, each) => sum + (each.shadowLimitedMessages ?? 0), 0),
      refused: entries.reduce((sum, each) => sum + each.shedUnits + each.rejectedUnits + each.shedMessages + each.rejectedMessages, 0),
    };
  };

  it('counts a per-message charge the shadow would refuse as one message and no units, refusing none', async () => {
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { tier: { ratePerSecond: 100, burst: 200 }, override: { shadow: { ratePerSecond: 5, burst: 10 } } } });
    const { gov, recorder } = await loaded(source);
    expect(send(gov, { tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', charge: 'message' })).toBe(0);
    await gov.flush();
    const refused = bucketRefuses(5, 10);
    expect(Math.abs(refused - 141)).toBeLessThanOrEqual(1);
    expect(shadowed(recorder, 'INGEST')).toEqual({ units: 0, messages: refused, refused: 0 });
  });

  it('charges a request whose message the shadow would refuse nothing more: its readings skip the shadow, its message counts once', async () => {
    // As a door charges: one message, then its readings, at the same arrival time; 20 requests a second for
    // 10 s, the enforced limit far above, the shadow 5/s burst 10 on both its buckets.
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { tier: { ratePerSecond: 1000, burst: 2000 }, override: { shadow: { ratePerSecond: 5, burst: 10 } } } });
    const { gov, recorder } = await loaded(source);
    let refused = 0;
    for (let i = 0; i < 200; i++) {
      const at = T0 + i * 50;
      if (!gov.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', charge: 'message', units: 1, at }).admitted) refused++;
      if (!gov.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', units: 1, at }).admitted) refused++;
    }
    await gov.flush();
    expect(refused).toBe(0);
    // By hand: the shadow's message bucket holds 10 and refills 0.25 a request, so it admits 13 in the first
    // 650 ms (10 + 12 x 0.25 = 13) and then one request in four of the other 187 (46): 59 admitted and 141
    // refused. The enforced path with the shadow's numbers would charge readings for those 59 only, on a
    // bucket of the same numbers that admits each of them as the message bucket did: no units refused.
    expect(bucketRefuses(5, 10)).toBe(141);
    expect(shadowed(recorder, 'INGEST')).toEqual({ units: 0, messages: 141, refused: 0 });
  });

  it('still decides the readings of a request whose message the shadow admitted', async () => {
    // Two requests a second for 10 s, each one message and 3 units of readings, on a shadow of 5/s burst 10.
    // By hand: the message bucket admits all 20 (it gains 2.5 a request). The readings bucket holds 10 and
    // gains 2.5 between requests: the first k fit while 3k <= 10 + 2.5(k - 1), so 15 fit and leave it empty;
    // the 16th finds 2.5 < 3 (refused, spends nothing), then 5, 4.5, 4 and 3.5 admit the last four. So the
    // shadow refuses one readings charge: 3 units, 1 message.
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { tier: { ratePerSecond: 1000, burst: 2000 }, override: { shadow: { ratePerSecond: 5, burst: 10 } } } });
    const { gov, recorder } = await loaded(source);
    for (let i = 0; i < 20; i++) {
      const at = T0 + i * 500;
      gov.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', charge: 'message', units: 1, at });
      gov.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', units: 3, at });
    }
    await gov.flush();
    expect(shadowed(recorder, 'INGEST')).toEqual({ units: 3, messages: 1, refused: 0 });
  });

  it('decides API_REQUESTS on a fixed window of its own, as EXACT_REJECT would, even for a tenant that downsamples', async () => {
    const source = new MemoryLimitSource().tenant(
      'acme',
      { API_REQUESTS: { tier: { ratePerSecond: 100, shadow: { ratePerSecond: 5 } } } },
      { apiOverLimitPolicy: 'STABLE_DOWNSAMPLE' },
    );
    const { gov, recorder } = await loaded(source);
    expect(send(gov, { tenant: 'acme', dimension: 'API_REQUESTS' })).toBe(0);
    await gov.flush();
    expect(shadowed(recorder, 'API_REQUESTS')).toEqual({ units: 150, messages: 150, refused: 0 });
  });

  it("watches a tenant the platform default governs with the default's shadow", async () => {
    const source = new MemoryLimitSource().tenant('acme', {});
    source.platformDefaults = { EGRESS: { ratePerSecond: 100, burst: 200, shadow: { ratePerSecond: 5, burst: 10 } } };
    const { gov, recorder } = await loaded(source);
    expect(send(gov, { tenant: 'acme', dimension: 'EGRESS', allowance: 'CONNECTORS' })).toBe(0);
    await gov.flush();
    const refused = bucketRefuses(5, 10);
    expect(shadowed(recorder, 'EGRESS')).toEqual({ units: refused, messages: refused, refused: 0 });
  });
});
