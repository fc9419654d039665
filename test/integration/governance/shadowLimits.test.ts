// Shadow limits end to end on PostgreSQL: a tier limit set with mode SHADOW is decided by the Governor beside
// the enforced one and refuses nothing; what it would have refused reaches the ledger's summaries, the
// trends and /metrics, matches the preview of the same limit over the same window within 5%, shows in
// effectiveLimits and the history with its mode, and promoteShadowLimit enforces it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresOnly } from '../../support/databases.ts';
import { OPERATOR, openControlPlane, SETUP_TIMEOUT_MS, type ControlPlaneHarness } from '../../support/controlPlaneHarness.ts';
import { waitFor } from '../../support/waitFor.ts';
import { fanOutRecorder, Governor } from '../../../src/governance/index.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { createReadModelLimitSource, limitHistory, loadEffectiveLimits, loadTenantGovernance } from '../../../src/control-plane/index.ts';
import { createMetrics, createMetricsRecorder, shedTrend } from '../../../src/metrics/index.ts';
import { startProjections, type ProjectionSet } from '../../../src/ledger/projectionSet.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { previewLimitChange } from '../../../src/limit-preview/index.ts';
import { admissionSummaryReader } from '../../../src/ledger/catalog/summaryRefs.ts';

describe.skipIf(!postgresOnly)('shadow limits on PostgreSQL (DATABASE_URL)', () => {
  let harness: ControlPlaneHarness;
  let trends: ProjectionSet;
  let governor: Governor;
  const metrics = createMetrics({ service: 'shadow-test', processMetrics: false });
  const fromMs = Math.floor(Date.now() / 1000) * 1000 - 120_000;
  const from = new Date(fromMs);
  const to = new Date(fromMs + 60_000);
  const admitted: boolean[] = [];

  beforeAll(async () => {
    harness = await openControlPlane(postgresOnly!, { project: true });
    const cp = harness.controlPlane;
    expect((await cp.defineTier(OPERATOR, { tierId: 'gold', name: 'Gold' })).status).toBe('applied');
    expect((await cp.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 100, burst: 200 })).status).toBe('applied');
    expect((await cp.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10, mode: 'SHADOW', reason: 'try 5/s' })).status).toBe('applied');
    expect((await cp.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'gold' })).status).toBe('applied');
    await harness.caughtUp();
    trends = await startProjections(harness.db, harness.store, [admissionTrendsProjection], { retryDelayMs: 50 });
    governor = new Governor({
      limitSource: createReadModelLimitSource(harness.db),
      recorder: fanOutRecorder(createLedgerRecorder(harness.store, { referenceKeys: true }), createMetricsRecorder(metrics)),
    });
    const { tenants, platformDefaults } = await loadTenantGovernance(harness.db, ['acme'], new Date());
    governor.learnLimits(tenants.values(), platformDefaults);
    for (let second = 0; second < 60; second++) {
      for (let i = 0; i < 20; i++) {
        admitted.push(governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: fromMs + second * 1000 + i * 50 }).admitted);
      }
    }
    await governor.flush();
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await governor?.close();
    await trends?.close();
    await harness?.close();
  });

  it('refuses nothing, and records what it would have refused: as the preview of the same limit within 5%', async () => {
    expect(admitted.every(Boolean)).toBe(true);
    const events = await harness.store.readStream('governance-admissions');
    const summaries = events.flatMap(admissionSummaryReader());
    const shadowUnits = summaries.reduce((sum, entry) => sum + (entry.shadowLimitedUnits ?? 0), 0);
    const shadowMessages = summaries.reduce((sum, entry) => sum + (entry.shadowLimitedMessages ?? 0), 0);
    expect(summaries.reduce((sum, entry) => sum + entry.shedUnits + entry.rejectedUnits, 0)).toBe(0);
    const preview = await previewLimitChange(harness.db, { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10 }, from, to });
    const previewed = preview.tenants[0]!.refusedUnits;
    expect(Math.abs(shadowUnits - previewed) / previewed).toBeLessThan(0.05);
    expect(Math.abs(shadowMessages - previewed) / previewed).toBeLessThan(0.05);
    expect(Math.abs(shadowUnits - 890) / 890).toBeLessThan(0.02);

    // The trends and /metrics carry the same count.
    await waitFor(
      async () => {
        const points = await shedTrend(harness.db, { tenantId: 'acme', dimension: 'INGEST', from, to: new Date(to.getTime() + 60_000), bucket: 'HOUR' });
        return points.reduce((sum, point) => sum + point.shadowLimited, 0) === shadowUnits;
      },
      { timeoutMs: 30_000, description: 'trend with the shadow-limited units' },
    );
    const text = await metrics.render();
    const line = text.split('\n').find((each) => each.startsWith('devicechain_shadow_test_governance_shadow_limited_units_total{') && each.includes('tenant="acme"'));
    expect(Number(line?.split(' ').at(-1))).toBe(shadowUnits);
  });

  it('shows beside the enforced limit in effectiveLimits and in the history with its mode; promoteShadowLimit enforces it', async () => {
    const limits = (await loadEffectiveLimits(harness.db, ['acme'])).get('acme')!.limits.find((limit) => limit.dimension === 'INGEST')!;
    expect(limits).toMatchObject({ value: { ratePerSecond: 100, burst: 200 }, source: 'TIER', shadow: { value: { ratePerSecond: 5, burst: 10 }, source: 'TIER' } });
    const history = await limitHistory(harness.db, { tierId: 'gold', dimension: 'INGEST' });
    expect(history.nodes.map((change) => [change.kind, change.mode, change.value?.ratePerSecond])).toEqual([
      ['TIER_SHADOW_LIMIT_SET', 'SHADOW', 5],
      ['TIER_LIMIT_SET', 'ENFORCE', 100],
    ]);

    expect((await harness.controlPlane.promoteShadowLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', reason: 'watched a day' })).status).toBe('applied');
    expect((await harness.controlPlane.promoteShadowLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST' })).status).toBe('failed');
    await harness.caughtUp();
    const promoted = (await loadEffectiveLimits(harness.db, ['acme'])).get('acme')!.limits.find((limit) => limit.dimension === 'INGEST')!;
    expect(promoted).toEqual({ dimension: 'INGEST', value: { ratePerSecond: 5, burst: 10 }, source: 'TIER' });
    const after = await limitHistory(harness.db, { tierId: 'gold', dimension: 'INGEST', first: 1 });
    expect(after.nodes[0]).toMatchObject({ kind: 'TIER_SHADOW_LIMIT_PROMOTED', mode: 'ENFORCE', value: { ratePerSecond: 5, burst: 10 }, previous: { ratePerSecond: 100, burst: 200 } });

    // Enforced now: the Governor that reads the change refuses over 5/s.
    governor.reloadLimits({ kind: 'tier', tierId: 'gold' });
    await governor.loadsSettled();
    const at = Date.now();
    const decisions = Array.from({ length: 20 }, (_, i) => governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: at + i }).admitted);
    expect(decisions.filter(Boolean).length).toBeLessThanOrEqual(11);
  });

  it('refuses a shadow limit on a count ceiling, as a typed error', async () => {
    const result = await harness.controlPlane.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'UNDELIVERED_COMMANDS', ceiling: 5, mode: 'SHADOW' });
    expect(result).toMatchObject({ status: 'failed', error: { kind: 'InvalidInput', field: 'mode' } });
  });
});
