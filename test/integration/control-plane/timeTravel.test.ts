// Time travel: what was in force at any past instant, answered from the ledger. A sequence of changes,
// with probes between them: a tier change, an override that lapses by itself, a tier reassignment, a tier
// limit cleared back to the platform default, an override set and cleared.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LimitChangeResult as ControlPlaneResult } from '../../../src/control-plane/change-requests/runRequests.ts';
import { effectiveLimitsAt } from '../../../src/control-plane/effectiveLimitsAt.ts';
import { loadEffectiveLimits } from '../../../src/control-plane/effectiveLimits.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { OPERATOR, openControlPlane, type ControlPlaneHarness, SETUP_TIMEOUT_MS } from '../../support/controlPlaneHarness.ts';

const MINUTE_MS = 60_000;

describeOnEachStorage('effectiveLimitsAt on $name', (target) => {
  let h: ControlPlaneHarness;
  const t: Record<string, Date> = {};

  beforeAll(async () => {
    h = await openControlPlane(target, { project: true, start: new Date('2026-02-01T00:00:00.000Z') });
    const cp = h.controlPlane;
    const at = (name: string) => (t[name] = h.clock.advance(10 * MINUTE_MS));
    at('setup');
    applied(await cp.setPlatformDefault(OPERATOR, { dimension: 'INGEST', ratePerSecond: 800, burst: 1600 }));
    applied(await cp.defineTier(OPERATOR, { tierId: 'silver', name: 'Silver' }));
    applied(await cp.defineTier(OPERATOR, { tierId: 'gold', name: 'Gold' }));
    applied(await cp.setTierLimit(OPERATOR, { tierId: 'silver', dimension: 'INGEST', ratePerSecond: 2000, burst: 4000 }));
    applied(await cp.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5000, burst: 10000 }));
    at('registered');
    applied(await cp.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'silver' }));
    at('silverRaised');
    applied(await cp.setTierLimit(OPERATOR, { tierId: 'silver', dimension: 'INGEST', ratePerSecond: 2500, burst: 5000 }));
    at('overridden');
    t.lapses = new Date(t.overridden!.getTime() + 25 * MINUTE_MS);
    applied(await cp.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 9000, burst: 9000, reason: 'backfill', expiresAt: t.lapses }));
    at('movedToGold');
    applied(await cp.assignTenantTier(OPERATOR, { tenantId: 'acme', tierId: 'gold', reason: 'upgrade' }));
    at('lapsedAlready');
    at('goldCleared');
    applied(await cp.clearTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', reason: 'repackaging' }));
    at('overriddenAgain');
    applied(await cp.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 7000, reason: 'incident' }));
    at('cleared');
    applied(await cp.clearTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'INGEST', reason: 'incident over' }));
    at('end');
    await h.caughtUp();
  }, SETUP_TIMEOUT_MS);
  afterAll(() => h.close());

  const ingestAt = async (instant: Date) => {
    const limits = await effectiveLimitsAt(h.store, 'acme', instant);
    if ('notRegistered' in limits) return limits;
    const ingest = limits.limits.find((limit) => limit.dimension === 'INGEST')!;
    return { tierId: limits.tierId, ratePerSecond: ingest.value.ratePerSecond, source: ingest.source };
  };
  const between = (from: string, minutes = 5) => new Date(t[from]!.getTime() + minutes * MINUTE_MS);

  it('answers "not registered" before the tenant existed, with when it was registered', async () => {
    expect(await ingestAt(between('setup'))).toEqual({ notRegistered: true, registeredAt: t.registered });
    expect(await effectiveLimitsAt(h.store, 'nobody', between('setup'))).toEqual({ notRegistered: true, registeredAt: null });
  });

  it.each([
    ['registered on silver', 'registered', { tierId: 'silver', ratePerSecond: 2000, source: 'TIER' }],
    ['silver raised', 'silverRaised', { tierId: 'silver', ratePerSecond: 2500, source: 'TIER' }],
    ['override in force', 'overridden', { tierId: 'silver', ratePerSecond: 9000, source: 'TENANT_OVERRIDE' }],
    ['moved to gold, override still in force', 'movedToGold', { tierId: 'gold', ratePerSecond: 9000, source: 'TENANT_OVERRIDE' }],
    ['override lapsed: gold applies', 'lapsedAlready', { tierId: 'gold', ratePerSecond: 5000, source: 'TIER' }],
    ['gold cleared: platform default', 'goldCleared', { tierId: 'gold', ratePerSecond: 800, source: 'PLATFORM_DEFAULT' }],
    ['second override', 'overriddenAgain', { tierId: 'gold', ratePerSecond: 7000, source: 'TENANT_OVERRIDE' }],
    ['second override cleared', 'cleared', { tierId: 'gold', ratePerSecond: 800, source: 'PLATFORM_DEFAULT' }],
  ])('%s', async (_name, after, expected) => {
    expect(await ingestAt(between(after))).toEqual(expected);
  });

  it('lets the override apply until its expiresAt and not at that instant', async () => {
    expect(await ingestAt(new Date(t.lapses!.getTime() - 1))).toMatchObject({ ratePerSecond: 9000, source: 'TENANT_OVERRIDE' });
    expect(await ingestAt(t.lapses!)).toMatchObject({ ratePerSecond: 5000, source: 'TIER' });
  });

  it('counts a change from the instant it was made', async () => {
    expect(await ingestAt(new Date(t.silverRaised!.getTime() - 1))).toMatchObject({ ratePerSecond: 2000 });
    expect(await ingestAt(t.silverRaised!)).toMatchObject({ ratePerSecond: 2500 });
  });

  it('agrees with the read models about now', async () => {
    const fromLedger = await effectiveLimitsAt(h.store, 'acme', t.end!);
    const fromReadModel = (await loadEffectiveLimits(h.db, ['acme'], t.end!)).get('acme');
    expect('sourceEvents' in fromLedger && fromLedger.sourceEvents.INGEST?.length).toBeGreaterThan(0);
    const { sourceEvents: _sources, ...limits } = fromLedger as Extract<typeof fromLedger, { sourceEvents: unknown }>;
    expect(limits).toEqual(fromReadModel);
  });
});

function applied(result: ControlPlaneResult): void {
  expect(result.status === 'failed' ? result.error : 'applied').toBe('applied');
}
