// Shadow limits beyond a tier's readings bucket, on PostgreSQL: the per-message charge (counted as messages),
// API_REQUESTS (a fixed window) and a platform default set with mode SHADOW. Each refuses nothing and records
// what it would have refused in the ledger's summaries, the trends and /metrics, as a hand-worked count and the
// preview of the same limit over the same window say; each shows in effectiveLimits and the history with its
// mode; the platform default's shadow is promoted with promoteShadowLimit(platform: true).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresOnly } from '../../support/databases.ts';
import { OPERATOR, openControlPlane, SETUP_TIMEOUT_MS, type ControlPlaneHarness } from '../../support/controlPlaneHarness.ts';
import { waitFor } from '../../support/waitFor.ts';
import { fanOutRecorder, Governor, type Allowance, type Dimension } from '../../../src/governance/index.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { createReadModelLimitSource, limitHistory, loadEffectiveLimits, loadTenantGovernance } from '../../../src/control-plane/index.ts';
import { createMetrics, createMetricsRecorder, shedTrend } from '../../../src/metrics/index.ts';
import { startProjections, type ProjectionSet } from '../../../src/ledger/projectionSet.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { previewLimitChange } from '../../../src/limit-preview/index.ts';
import { admissionSummaryReader } from '../../../src/ledger/catalog/summaryRefs.ts';
import type { AdmissionSummary } from '../../../src/governance/index.ts';

// 20 a second for 60 s against 5/s with a burst of 10, one unit each, evenly spaced: the bucket admits its
// burst of 10, then 5 a second (a token every 200 ms, a request every 50 ms), so 10 + 5 x 59.95 = 309.75 are
// admitted and 1,200 - 309.75 = 890 refused. A fixed window of 5 a second refuses 15 in each of 60 seconds: 900.
const BUCKET_REFUSED = 890;
const WINDOW_REFUSED = 900;

describe.skipIf(!postgresOnly)('shadow limits on messages, API_REQUESTS and platform defaults, on PostgreSQL (DATABASE_URL)', () => {
  let harness: ControlPlaneHarness;
  let trends: ProjectionSet;
  let governor: Governor;
  let summaries: AdmissionSummary[];
  const metrics = createMetrics({ service: 'shadow-kinds', processMetrics: false });
  const fromMs = Math.floor(Date.now() / 1000) * 1000 - 120_000;
  const from = new Date(fromMs);
  const to = new Date(fromMs + 60_000);
  const refusedByEnforced: string[] = [];

  /** 20 charges a second for 60 s, evenly spaced; any the enforced limit refuses is noted. */
  function send(tenant: string, dimension: Dimension, allowance: Allowance | undefined, charge?: 'message'): void {
    for (let second = 0; second < 60; second++) {
      for (let i = 0; i < 20; i++) {
        const decision = governor.admit({ tenant, dimension, ...(allowance ? { allowance } : {}), units: 1, at: fromMs + second * 1000 + i * 50, ...(charge ? { charge } : {}) });
        if (!decision.admitted) refusedByEnforced.push(`${tenant} ${dimension} ${second}`);
      }
    }
  }

  const sum = (tenantId: string, dimension: Dimension, field: 'shadowLimitedUnits' | 'shadowLimitedMessages') =>
    summaries.filter((entry) => entry.tenantId === tenantId && entry.dimension === dimension).reduce((total, entry) => total + (entry[field] ?? 0), 0);

  function metric(name: string, tenant: string, dimension: Dimension, text: string): number {
    const line = text.split('\n').find((each) => each.startsWith(`devicechain_shadow_kinds_governance_${name}{`) && each.includes(`tenant="${tenant}"`) && each.includes(`dimension="${dimension}"`));
    return Number(line?.split(' ').at(-1));
  }

  async function trendTotal(tenantId: string, dimension: Dimension, field: 'shadowLimited' | 'shadowLimitedMessages'): Promise<number> {
    const points = await shedTrend(harness.db, { tenantId, dimension, from, to: new Date(to.getTime() + 60_000), bucket: 'HOUR' });
    return points.reduce((total, point) => total + point[field], 0);
  }

  beforeAll(async () => {
    harness = await openControlPlane(postgresOnly!, { project: true });
    const cp = harness.controlPlane;
    const applied = async (result: Promise<{ status: string }>) => expect((await result).status).toBe('applied');
    await applied(cp.defineTier(OPERATOR, { tierId: 'gold', name: 'Gold' }));
    await applied(cp.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 100, burst: 200 }));
    await applied(cp.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'API_REQUESTS', ratePerSecond: 100 }));
    await applied(cp.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'API_REQUESTS', ratePerSecond: 5, mode: 'SHADOW', reason: 'try 5 a second' }));
    await applied(cp.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'gold' }));
    await applied(cp.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 5, burst: 10, mode: 'SHADOW', reason: 'messages at 5/s' }));
    // A tenant on no tier: the platform default governs it, and the default's shadow watches it.
    await applied(cp.setPlatformDefault(OPERATOR, { dimension: 'EGRESS', ratePerSecond: 100, burst: 200 }));
    await applied(cp.setPlatformDefault(OPERATOR, { dimension: 'EGRESS', ratePerSecond: 5, burst: 10, mode: 'SHADOW', reason: 'a lower default' }));
    await applied(cp.registerTenant(OPERATOR, { tenantId: 'solo' }));
    await harness.caughtUp();
    trends = await startProjections(harness.db, harness.store, [admissionTrendsProjection], { retryDelayMs: 50 });
    governor = new Governor({
      limitSource: createReadModelLimitSource(harness.db),
      recorder: fanOutRecorder(createLedgerRecorder(harness.store, { referenceKeys: true }), createMetricsRecorder(metrics)),
    });
    const { tenants, platformDefaults } = await loadTenantGovernance(harness.db, ['acme', 'solo'], new Date());
    governor.learnLimits(tenants.values(), platformDefaults);
    // Per-message charges alone (the charge a door takes before it decodes a request).
    send('acme', 'INGEST', 'LIVE', 'message');
    send('acme', 'API_REQUESTS', undefined);
    send('solo', 'EGRESS', 'CONNECTORS');
    await governor.flush();
    summaries = (await harness.store.readStream('governance-admissions')).flatMap(admissionSummaryReader());
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await governor?.close();
    await trends?.close();
    await harness?.close();
  });

  it('refuses nothing', () => {
    expect(refusedByEnforced).toEqual([]);
    expect(summaries.reduce((total, entry) => total + entry.shedUnits + entry.rejectedUnits + entry.shedMessages + entry.rejectedMessages, 0)).toBe(0);
  });

  it('counts a per-message charge the shadow would have refused as a message, in the ledger, the trends and /metrics', async () => {
    const messages = sum('acme', 'INGEST', 'shadowLimitedMessages');
    expect(Math.abs(messages - BUCKET_REFUSED) / BUCKET_REFUSED).toBeLessThan(0.02);
    expect(sum('acme', 'INGEST', 'shadowLimitedUnits')).toBe(0);
    await waitFor(async () => (await trendTotal('acme', 'INGEST', 'shadowLimitedMessages')) === messages, { timeoutMs: 30_000, description: 'the trend of shadow-limited messages' });
    expect(await trendTotal('acme', 'INGEST', 'shadowLimited')).toBe(0);
    expect(metric('shadow_limited_messages_total', 'acme', 'INGEST', await metrics.render())).toBe(messages);
  });

  it('decides API_REQUESTS on a fixed window of its own: the hand-worked count and the preview of the same limit', async () => {
    const units = sum('acme', 'API_REQUESTS', 'shadowLimitedUnits');
    expect(units).toBe(WINDOW_REFUSED);
    expect(sum('acme', 'API_REQUESTS', 'shadowLimitedMessages')).toBe(WINDOW_REFUSED);
    const preview = await previewLimitChange(harness.db, { tierLimit: { tierId: 'gold', dimension: 'API_REQUESTS', ratePerSecond: 5 }, from, to });
    const previewed = preview.tenants.find((tenant) => tenant.tenantId === 'acme')!.refusedUnits;
    expect(Math.abs(units - previewed) / previewed).toBeLessThan(0.05);
    await waitFor(async () => (await trendTotal('acme', 'API_REQUESTS', 'shadowLimited')) === units, { timeoutMs: 30_000, description: 'the API_REQUESTS shadow trend' });
    const text = await metrics.render();
    expect(metric('shadow_limited_units_total', 'acme', 'API_REQUESTS', text)).toBe(units);
    expect(metric('shadow_limited_messages_total', 'acme', 'API_REQUESTS', text)).toBe(units);
  });

  it('watches the tenants a platform default governs with its shadow: as the preview of that default within 5%', async () => {
    const units = sum('solo', 'EGRESS', 'shadowLimitedUnits');
    expect(Math.abs(units - BUCKET_REFUSED) / BUCKET_REFUSED).toBeLessThan(0.02);
    const preview = await previewLimitChange(harness.db, { platformDefault: { dimension: 'EGRESS', ratePerSecond: 5, burst: 10 }, from, to });
    const previewed = preview.tenants.find((tenant) => tenant.tenantId === 'solo')!.refusedUnits;
    expect(Math.abs(units - previewed) / previewed).toBeLessThan(0.05);
    await waitFor(async () => (await trendTotal('solo', 'EGRESS', 'shadowLimited')) === units, { timeoutMs: 30_000, description: 'the EGRESS shadow trend' });
    expect(metric('shadow_limited_units_total', 'solo', 'EGRESS', await metrics.render())).toBe(units);
  });

  it('shows each shadow in effectiveLimits and the history with its mode', async () => {
    const limits = await loadEffectiveLimits(harness.db, ['acme', 'solo']);
    const of = (tenantId: string, dimension: Dimension) => limits.get(tenantId)!.limits.find((limit) => limit.dimension === dimension)!;
    expect(of('acme', 'INGEST')).toMatchObject({ value: { ratePerSecond: 100, burst: 200 }, source: 'TIER', shadow: { value: { ratePerSecond: 5, burst: 10 }, source: 'TENANT_OVERRIDE' } });
    expect(of('acme', 'API_REQUESTS')).toMatchObject({ value: { ratePerSecond: 100 }, source: 'TIER', shadow: { value: { ratePerSecond: 5 }, source: 'TIER' } });
    expect(of('solo', 'EGRESS')).toMatchObject({ value: { ratePerSecond: 100, burst: 200 }, source: 'PLATFORM_DEFAULT', shadow: { value: { ratePerSecond: 5, burst: 10 }, source: 'PLATFORM_DEFAULT' } });
    // acme's tier sets no EGRESS: the platform default's shadow watches it too.
    expect(of('acme', 'EGRESS').shadow).toMatchObject({ source: 'PLATFORM_DEFAULT' });

    const platform = (await limitHistory(harness.db, { dimension: 'EGRESS' })).nodes.filter((change) => change.tenantId === null && change.tierId === null);
    expect(platform.map((change) => [change.kind, change.mode, change.value?.ratePerSecond])).toEqual([
      ['PLATFORM_SHADOW_DEFAULT_SET', 'SHADOW', 5],
      ['PLATFORM_DEFAULT_SET', 'ENFORCE', 100],
    ]);
    const tier = await limitHistory(harness.db, { tierId: 'gold', dimension: 'API_REQUESTS' });
    expect(tier.nodes.map((change) => [change.kind, change.mode, change.value?.ratePerSecond])).toEqual([
      ['TIER_SHADOW_LIMIT_SET', 'SHADOW', 5],
      ['TIER_LIMIT_SET', 'ENFORCE', 100],
    ]);
  });

  it('promotes the platform default’s shadow; refuses a shadow on a count ceiling as a typed error', async () => {
    const cp = harness.controlPlane;
    expect((await cp.promoteShadowLimit(OPERATOR, { platform: true, dimension: 'EGRESS', reason: 'watched a day' })).status).toBe('applied');
    expect(await cp.promoteShadowLimit(OPERATOR, { platform: true, dimension: 'EGRESS' })).toMatchObject({ status: 'failed', error: { kind: 'InvalidInput' } });
    expect(await cp.promoteShadowLimit(OPERATOR, { platform: true, tierId: 'gold', dimension: 'EGRESS' })).toMatchObject({ status: 'failed', error: { kind: 'InvalidInput' } });
    await harness.caughtUp();
    const solo = (await loadEffectiveLimits(harness.db, ['solo'])).get('solo')!.limits.find((limit) => limit.dimension === 'EGRESS')!;
    expect(solo).toEqual({ dimension: 'EGRESS', value: { ratePerSecond: 5, burst: 10 }, source: 'PLATFORM_DEFAULT' });
    const latest = (await limitHistory(harness.db, { dimension: 'EGRESS', first: 1 })).nodes[0];
    expect(latest).toMatchObject({ kind: 'PLATFORM_SHADOW_DEFAULT_PROMOTED', mode: 'ENFORCE', value: { ratePerSecond: 5, burst: 10 }, previous: { ratePerSecond: 100, burst: 200 } });

    const ceiling = await cp.setPlatformDefault(OPERATOR, { dimension: 'UNDELIVERED_COMMANDS', ceiling: 10, mode: 'SHADOW' });
    expect(ceiling).toMatchObject({ status: 'failed', error: { kind: 'InvalidInput', field: 'mode' } });
  });
});
