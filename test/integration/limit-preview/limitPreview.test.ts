// The limit preview on PostgreSQL: a tenant sent a recorded pattern through the Governor and the ledger
// Recorder is previewed against a lower limit, and the refused units match a count worked by hand.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresOnly } from '../../support/databases.ts';
import { OPERATOR, openControlPlane, SETUP_TIMEOUT_MS, type ControlPlaneHarness } from '../../support/controlPlaneHarness.ts';
import { Governor } from '../../../src/governance/index.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { createReadModelLimitSource, loadTenantGovernance } from '../../../src/control-plane/index.ts';
import { InvalidPreview, previewLimitChange } from '../../../src/limit-preview/index.ts';
import { spawnTs } from '../../support/spawnTs.ts';

describe.skipIf(!postgresOnly)('limit preview on PostgreSQL (DATABASE_URL)', () => {
  let harness: ControlPlaneHarness;
  let governor: Governor;
  // Whole seconds two minutes back, so the range is past and its summaries recorded within the preview's slack.
  const fromMs = Math.floor(Date.now() / 1000) * 1000 - 120_000;
  const from = new Date(fromMs);
  const to = new Date(fromMs + 60_000);

  beforeAll(async () => {
    harness = await openControlPlane(postgresOnly!, { project: true });
    const cp = harness.controlPlane;
    expect((await cp.defineTier(OPERATOR, { tierId: 'gold', name: 'Gold' })).status).toBe('applied');
    expect((await cp.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 100, burst: 200 })).status).toBe('applied');
    expect((await cp.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'gold' })).status).toBe('applied');
    expect((await cp.registerTenant(OPERATOR, { tenantId: 'quiet', tierId: 'gold' })).status).toBe('applied');
    await harness.caughtUp();
    governor = new Governor({ limitSource: createReadModelLimitSource(harness.db), recorder: createLedgerRecorder(harness.store, { referenceKeys: true }) });
    const { tenants, platformDefaults } = await loadTenantGovernance(harness.db, ['acme', 'quiet'], new Date());
    governor.learnLimits(tenants.values(), platformDefaults);
    // 20 readings a second for 60 s, one a message every 50 ms; 'quiet' sends 1 a second.
    for (let second = 0; second < 60; second++) {
      for (let i = 0; i < 20; i++) {
        const decision = governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: fromMs + second * 1000 + i * 50 });
        expect(decision.admitted).toBe(true);
      }
      governor.admit({ tenant: 'quiet', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: fromMs + second * 1000 });
    }
    await governor.flush();
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await governor?.close();
    await harness?.close();
  });

  it('previews 20/s for 60 s against 5/s (burst 10): the refused units match the count worked by hand within 2%', async () => {
    const preview = await previewLimitChange(harness.db, { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10 }, from, to });
    // By hand: the bucket starts with 10 and refills 5 a second, so of 1,200 readings over 60 s about
    // 10 + 5 x 60 = 310 are admitted and 890 refused.
    const acme = preview.tenants.find((tenant) => tenant.tenantId === 'acme')!;
    expect(Math.abs(acme.refusedUnits - 890) / 890).toBeLessThan(0.02);
    expect(Math.abs(acme.refusedMessages - 890) / 890).toBeLessThan(0.02);
    expect(acme).toMatchObject({ demandUnits: 1200, demandMessages: 1200, currentRefusedUnits: 0, recordedRefusedUnits: 0, currentLimitedSeconds: 0 });
    expect(acme.currentLimit).toEqual({ ratePerSecond: 100, burst: 200 });
    expect(acme.proposedLimit).toEqual({ ratePerSecond: 5, burst: 10 });
    // Every second after the first burst refuses something; the worst minute is the only one.
    expect(acme.limitedSeconds).toBeGreaterThanOrEqual(59);
    expect(acme.worstMinute?.refusedUnits).toBeGreaterThan(0);
    // 'quiet' sends 1/s: it is affected (its limit moves) but refused nothing.
    expect(preview.tenants.find((tenant) => tenant.tenantId === 'quiet')).toMatchObject({ refusedUnits: 0, demandUnits: 60 });
    expect(preview.tenantsAffected).toBe(2);
    expect(preview.total.refusedUnits).toBe(acme.refusedUnits);
    expect(preview.total.demandUnits).toBe(1260);
  });

  it('answers the range as a series for a chart: minute buckets whose sums are the totals', async () => {
    const preview = await previewLimitChange(harness.db, { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10 }, from, to });
    expect(preview.proposedLimit).toEqual({ ratePerSecond: 5, burst: 10 });
    // The range's 60 s lie in one or two minutes of the clock: a bucket each, starting at the minute.
    const minutes = fromMs % 60_000 === 0 ? 1 : 2;
    expect(preview.series.map((point) => point.seconds)).toEqual(Array(minutes).fill(60));
    expect(preview.series[0]!.start).toEqual(new Date(fromMs - (fromMs % 60_000)));
    const total = (field: 'demandUnits' | 'refusedUnits' | 'currentRefusedUnits' | 'recordedRefusedUnits') => preview.series.reduce((sum, point) => sum + point[field], 0);
    expect([total('demandUnits'), total('refusedUnits'), total('currentRefusedUnits'), total('recordedRefusedUnits')]).toEqual([1260, preview.total.refusedUnits, 0, 0]);
    expect(Math.max(...preview.series.map((point) => point.peakUnitsPerSecond))).toBe(20);
    // A week is cut into at most 500 buckets of whole minutes (21 minutes each), the recorded minute in one of them.
    const week = await previewLimitChange(harness.db, { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10 }, from: new Date(to.getTime() - 7 * 86_400_000), to });
    expect(week.series.length).toBeLessThanOrEqual(500);
    expect(new Set(week.series.map((point) => point.seconds))).toEqual(new Set([21 * 60]));
    expect(week.series.reduce((sum, point) => sum + point.demandUnits, 0)).toBe(1260);
    expect(week.series.reduce((sum, point) => sum + point.refusedUnits, 0)).toBe(week.total.refusedUnits);
  });

  it('an override of one tenant replays that tenant only; a limit no lower refuses nothing', async () => {
    const preview = await previewLimitChange(harness.db, { override: { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 50 }, from, to });
    expect(preview.tenants.map((tenant) => tenant.tenantId)).toEqual(['acme']);
    expect(preview.total.refusedUnits).toBe(0);
  });

  it('refuses a range over 31 days, a count ceiling, an unknown tier and two levels at once, as typed errors', async () => {
    const bad = [
      { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5 }, from: new Date(fromMs - 40 * 86_400_000), to },
      { tierLimit: { tierId: 'gold', dimension: 'UNDELIVERED_COMMANDS', ceiling: 5 }, from, to },
      { tierLimit: { tierId: 'nope', dimension: 'INGEST', ratePerSecond: 5 }, from, to },
      { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5 }, platformDefault: { dimension: 'INGEST', ratePerSecond: 5 } },
      { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: -5 } },
    ];
    for (const query of bad) await expect(previewLimitChange(harness.db, query)).rejects.toBeInstanceOf(InvalidPreview);
  });

  it('governance limits preview prints the same answer as a table', async () => {
    const expected = await previewLimitChange(harness.db, { tierLimit: { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5, burst: 10 }, from, to });
    const cli = spawnTs(
      ['src/cli.ts', 'limits', 'preview', '--tier', 'gold', '--dimension', 'INGEST', '--rate', '5', '--burst', '10', '--from', from.toISOString(), '--to', to.toISOString()],
      harness.testDb.env!,
    );
    expect(await cli.exited, cli.output()).toBe(0);
    const acmeLine = cli.output().split('\n').find((line) => line.startsWith('acme '))!;
    expect(acmeLine.split(/\s+/)).toContain(String(expected.tenants[0]!.refusedUnits));
    expect(cli.output()).toMatch(/^total \(2 tenants\)/m);
    const usage = spawnTs(['src/cli.ts', 'limits', 'preview', '--tier', 'gold', '--platform', '--dimension', 'INGEST', '--rate', '5'], harness.testDb.env!);
    expect(await usage.exited).toBe(2);
    expect(usage.output()).toContain('give exactly one of --tenant, --tier and --platform');
  }, 60_000);
});
