// Every control-plane read model rebuilt from the ledger comes out identical to the one kept live.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LimitChangeResult as ControlPlaneResult } from '../../../src/control-plane/change-requests/runRequests.ts';
import { controlPlaneProjections } from '../../../projections/controlPlane.ts';
import type { Queryable } from '../../../src/db/db.ts';
import { rebuildProjection } from '../../../src/ledger/rebuild.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { OPERATOR, openControlPlane, type ControlPlaneHarness, SETUP_TIMEOUT_MS } from '../../support/controlPlaneHarness.ts';

const MINUTE_MS = 60_000;

describeOnEachStorage('control-plane projections rebuilt on $name', (target) => {
  let h: ControlPlaneHarness;

  beforeAll(async () => {
    h = await openControlPlane(target, { project: true });
    const cp = h.controlPlane;
    const later = (minutes: number) => new Date(h.clock.now.getTime() + minutes * MINUTE_MS);
    applied(await cp.setPlatformDefault(OPERATOR, { dimension: 'EGRESS', ratePerSecond: 50, burst: 80, reason: 'quiet' }));
    applied(await cp.setBrandingDefault(OPERATOR, { branding: { productName: 'Platform' } }));
    for (const tierId of ['bronze', 'silver']) {
      applied(await cp.defineTier(OPERATOR, { tierId, name: tierId }));
      applied(await cp.setTierLimit(OPERATOR, { tierId, dimension: 'INGEST', ratePerSecond: tierId === 'bronze' ? 200 : 2000 }));
      applied(await cp.setTierDefaultModel(OPERATOR, { tierId, model: `${tierId}-model` }));
    }
    applied(await cp.clearTierLimit(OPERATOR, { tierId: 'bronze', dimension: 'INGEST', reason: 'reset' }));
    // A scheduled change, one withdrawn, and one applied at its instant: the requests' read model rebuilds too.
    const scheduled = await cp.setTierLimit(OPERATOR, { tierId: 'silver', dimension: 'EGRESS', ratePerSecond: 30, effectiveFrom: later(120) });
    const withdrawn = await cp.setTierLimit(OPERATOR, { tierId: 'silver', dimension: 'PROVISIONING', ratePerSecond: 3, effectiveFrom: later(5) });
    if (scheduled.status !== 'scheduled' || withdrawn.status !== 'scheduled') throw new Error('not scheduled');
    applied(await cp.withdrawLimitChange(OPERATOR, { changeId: withdrawn.changeId, reason: 'not yet' }));
    const soon = await cp.setTierLimit(OPERATOR, { tierId: 'bronze', dimension: 'EGRESS', ratePerSecond: 40, effectiveFrom: later(1) });
    if (soon.status !== 'scheduled') throw new Error('not scheduled');
    h.clock.advance(MINUTE_MS);
    applied(await cp.applyLimitChange(soon.changeId));
    for (let i = 0; i < 6; i++) {
      const tenantId = `tenant-${i}`;
      h.clock.advance(MINUTE_MS);
      applied(await cp.registerTenant(OPERATOR, { tenantId, tierId: i % 2 ? 'bronze' : 'silver' }));
      applied(await cp.setTenantOverride(OPERATOR, { tenantId, dimension: 'AI_INFERENCE', ratePerSecond: 10 + i, reason: 'trial', expiresAt: later(30) }));
      if (i % 3 === 0) {
        // Replaced before it lapses: the first override's lapse must vanish on rebuild too.
        applied(await cp.setTenantOverride(OPERATOR, { tenantId, dimension: 'AI_INFERENCE', ratePerSecond: 99, reason: 'extended', expiresAt: later(90) }));
      }
      if (i % 4 === 0) applied(await cp.assignTenantTier(OPERATOR, { tenantId, tierId: 'bronze', reason: 'downgrade' }));
      if (i % 5 === 0) applied(await cp.clearTenantOverride(OPERATOR, { tenantId, dimension: 'AI_INFERENCE', reason: 'ended' }));
      applied(await cp.assignTenantModel(OPERATOR, { tenantId, model: i % 2 ? 'gpt-4o-mini' : null }));
      applied(await cp.setTenantBranding(OPERATOR, { tenantId, branding: { productName: `Tenant ${i}` } }));
      applied(await cp.setTenantOverLimitPolicy(OPERATOR, { tenantId, policy: i % 2 ? 'EXACT_REJECT' : 'STABLE_DOWNSAMPLE' }));
    }
    await h.caughtUp();
  }, SETUP_TIMEOUT_MS);
  afterAll(() => h.close());

  it('gives identical tables for every projection', async () => {
    const projections = controlPlaneProjections();
    const live = await snapshot(h.db, projections.flatMap((projection) => projection.tables));
    expect(Object.values(live).every((rows) => rows.length > 0)).toBe(true);
    // tenant-3's first override was replaced before it lapsed: only the second one's lapse is pending.
    const lapses = await h.db.query(`SELECT at FROM gl_limit_history WHERE kind = 'OVERRIDE_EXPIRED' AND tenant_id = 'tenant-3'`);
    expect(lapses.rowCount).toBe(1);
    await h.projections!.close();
    for (const projection of projections) await rebuildProjection(h.db, h.store, projection);
    expect(await snapshot(h.db, projections.flatMap((projection) => projection.tables))).toEqual(live);
  });
});

async function snapshot(q: Queryable, tables: readonly string[]): Promise<Record<string, string[]>> {
  const result: Record<string, string[]> = {};
  for (const table of tables) {
    const { rows } = await q.query<{ row: string }>(`SELECT to_jsonb(t)::text AS row FROM ${table} t`);
    result[table] = rows.map((row) => row.row).sort();
  }
  return result;
}

function applied(result: ControlPlaneResult): void {
  expect(result.status === 'failed' ? result.error : 'applied').toBe('applied');
}
