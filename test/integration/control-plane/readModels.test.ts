// The read models as the service, the API and the Governor read them: effective limits with their source
// (one query however many tenants), expiry honoured at read time, the audit history with lapses, models and
// branding through the cascade, and a LimitSource the real Governor enforces.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LimitChangeResult as ControlPlaneResult } from '../../../src/control-plane/change-requests/runRequests.ts';
import { listTenants, loadOverrides, loadTenants, resolveTenantBrandings, resolveTenantModels } from '../../../src/control-plane/tenantRecords.ts';
import { createReadModelLimitSource, loadEffectiveLimits, resolveTenantLimit } from '../../../src/control-plane/effectiveLimits.ts';
import { loadLimitsAndFollowChanges } from '../../../src/control-plane/limitChanges.ts';
import { limitHistory, type LimitChange } from '../../../src/control-plane/limitHistory.ts';
import { listTiers } from '../../../src/control-plane/listTiers.ts';
import type { Queryable } from '../../../src/db/db.ts';
import { Governor } from '../../../src/governance/index.ts';
import { rebuildProjection } from '../../../src/ledger/rebuild.ts';
import { createTenantsProjection } from '../../../projections/tenants.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { OPERATOR, openControlPlane, type ControlPlaneHarness, SETUP_TIMEOUT_MS } from '../../support/controlPlaneHarness.ts';
import { waitFor } from '../../support/waitFor.ts';

const HOUR_MS = 3_600_000;

describeOnEachStorage('control-plane read models on $name', (target) => {
  let h: ControlPlaneHarness;
  let overrideExpiresAt: Date;
  const confirmed: string[] = [];

  beforeAll(async () => {
    h = await openControlPlane(target, { project: true, governor: { confirmTenant: (name) => confirmed.push(name) } });
    const cp = h.controlPlane;
    applied(await cp.setPlatformDefault(OPERATOR, { dimension: 'INGEST', ratePerSecond: 800, burst: 1600, reason: 'small cluster' }));
    applied(await cp.defineTier(OPERATOR, { tierId: 'gold', name: 'Gold' }));
    applied(await cp.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 5000, burst: 10000, reason: 'gold package' }));
    applied(await cp.setTierDefaultModel(OPERATOR, { tierId: 'gold', model: 'llama-3.1-70b' }));
    applied(await cp.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'gold' }));
    applied(await cp.registerTenant(OPERATOR, { tenantId: 'beta' }));
    applied(await cp.registerTenant(OPERATOR, { tenantId: 'gamma', tierId: 'gold' }));
    h.clock.advance(60_000);
    overrideExpiresAt = new Date(h.clock.now.getTime() + HOUR_MS);
    applied(
      await cp.setTenantOverride(OPERATOR, { tenantId: 'gamma', dimension: 'AI_INFERENCE', ratePerSecond: 50, burst: 60, reason: 'demo week', expiresAt: overrideExpiresAt }),
    );
    applied(await cp.assignTenantModel(OPERATOR, { tenantId: 'acme', model: 'gpt-4o-mini' }));
    applied(await cp.setBrandingDefault(OPERATOR, { branding: { productName: 'Acme Platform' } }));
    applied(await cp.setTenantBranding(OPERATOR, { tenantId: 'gamma', branding: { productName: 'Gamma Cloud', primaryColor: '#112233' } }));
    await h.caughtUp();
  }, SETUP_TIMEOUT_MS);
  afterAll(() => h.close());

  it('resolves every tenant through the cascade and says which level won', async () => {
    const limits = await loadEffectiveLimits(h.db, ['acme', 'beta', 'gamma', 'nobody'], h.clock.now);
    expect([...limits.keys()].sort()).toEqual(['acme', 'beta', 'gamma']);
    const pick = (tenantId: string, dimension: string) => limits.get(tenantId)!.limits.find((each) => each.dimension === dimension);
    expect(limits.get('acme')!.tierId).toBe('gold');
    expect(pick('acme', 'INGEST')).toEqual({ dimension: 'INGEST', value: { ratePerSecond: 5000, burst: 10000 }, source: 'TIER' });
    expect(pick('beta', 'INGEST')).toEqual({ dimension: 'INGEST', value: { ratePerSecond: 800, burst: 1600 }, source: 'PLATFORM_DEFAULT' });
    expect(pick('gamma', 'AI_INFERENCE')).toEqual({ dimension: 'AI_INFERENCE', value: { ratePerSecond: 50, burst: 60 }, source: 'TENANT_OVERRIDE' });
    expect(pick('beta', 'UNDELIVERED_COMMANDS')).toEqual({ dimension: 'UNDELIVERED_COMMANDS', value: { ceiling: 1000 }, source: 'SHIPPED_DEFAULT' });
  });

  it('reads the limits of many tenants in one query', async () => {
    const counting = countingQueries(h.db);
    const ids = Array.from({ length: 200 }, (_, i) => `tenant-${i}`).concat(['acme', 'gamma']);
    const limits = await loadEffectiveLimits(counting, ids, h.clock.now);
    expect(limits.size).toBe(2);
    expect(counting.count).toBe(1);
  });

  it('stops applying an override at its expiresAt, with nothing written since', async () => {
    const justBefore = new Date(overrideExpiresAt.getTime() - 1);
    expect(await resolveTenantLimit(h.db, 'gamma', 'AI_INFERENCE', justBefore)).toEqual({ value: { ratePerSecond: 50, burst: 60 }, source: 'TENANT_OVERRIDE' });
    expect(await resolveTenantLimit(h.db, 'gamma', 'AI_INFERENCE', overrideExpiresAt)).toEqual({ value: { ratePerSecond: 5, burst: 10 }, source: 'SHIPPED_DEFAULT' });
    expect(await resolveTenantLimit(h.db, 'nobody', 'AI_INFERENCE', overrideExpiresAt)).toBeNull();
    expect((await loadOverrides(h.db, ['gamma'], justBefore)).get('gamma')).toHaveLength(1);
    expect((await loadOverrides(h.db, ['gamma'], overrideExpiresAt)).get('gamma')).toEqual([]);
  });

  it('shows who changed what, when, why, from what to what, and the lapse once it has happened', async () => {
    const before = await limitHistory(h.db, { tenantId: 'gamma', now: h.clock.now });
    expect(before.nodes.map((change) => change.kind)).toEqual(['OVERRIDE_SET', 'TENANT_REGISTERED']);
    expect(before.nodes[0]).toMatchObject({
      actor: 'alice@ops',
      reason: 'demo week',
      dimension: 'AI_INFERENCE',
      previous: null,
      value: { ratePerSecond: 50, burst: 60 },
      expiresAt: overrideExpiresAt,
    });
    const after = await limitHistory(h.db, { tenantId: 'gamma', now: new Date(overrideExpiresAt.getTime() + HOUR_MS) });
    expect(after.nodes[0]).toMatchObject({
      kind: 'OVERRIDE_EXPIRED',
      at: overrideExpiresAt,
      actor: 'system:override-expiry',
      reason: 'expired',
      previous: { ratePerSecond: 50, burst: 60 },
      value: null,
    });
    expect(after.nodes[0]!.position).toBe(`${before.nodes[0]!.position}:expired`);

    const tier = await limitHistory(h.db, { tierId: 'gold', dimension: 'INGEST', now: h.clock.now });
    expect(tier.nodes).toEqual([
      expect.objectContaining({ kind: 'TIER_LIMIT_SET', reason: 'gold package', previous: null, value: { ratePerSecond: 5000, burst: 10000 } }),
    ]);
  });

  it('pages through the history with position cursors, each change once', async () => {
    const now = new Date(overrideExpiresAt.getTime() + HOUR_MS);
    const all = await limitHistory(h.db, { first: 100, now });
    const paged: LimitChange[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await limitHistory(h.db, { first: 2, after, now });
      paged.push(...page.nodes);
      if (!page.hasNextPage) break;
      after = page.endCursor;
    }
    expect(paged).toEqual(all.nodes);
    expect(all.nodes.length).toBeGreaterThanOrEqual(7);
    await expect(limitHistory(h.db, { after: 'garbage' })).rejects.toThrow(RangeError);
  });

  it('lists tenants by page and tiers with their limits', async () => {
    const first = await listTenants(h.db, { first: 2 });
    expect(first.nodes.map((tenant) => tenant.tenantId)).toEqual(['acme', 'beta']);
    const second = await listTenants(h.db, { first: 2, after: first.endCursor });
    expect(second).toMatchObject({ nodes: [{ tenantId: 'gamma', tierId: 'gold' }], hasNextPage: false });
    expect(await listTiers(h.db)).toEqual([
      expect.objectContaining({ tierId: 'gold', name: 'Gold', defaultModel: 'llama-3.1-70b', limits: { INGEST: { ratePerSecond: 5000, burst: 10000 } } }),
    ]);
    expect((await loadTenants(h.db, ['acme', 'nobody'])).get('acme')).toMatchObject({ tierId: 'gold', model: 'gpt-4o-mini' });
  });

  it('answers the AI model and branding through the same cascade', async () => {
    const models = await resolveTenantModels(h.db, ['acme', 'beta', 'gamma']);
    expect(models.get('acme')).toEqual({ model: 'gpt-4o-mini', source: 'TENANT_ASSIGNMENT' });
    expect(models.get('gamma')).toEqual({ model: 'llama-3.1-70b', source: 'TIER_DEFAULT' });
    expect(models.get('beta')).toEqual({ model: null, source: 'NONE' });
    const brandings = await resolveTenantBrandings(h.db, ['acme', 'gamma']);
    expect(brandings.get('gamma')).toEqual({ branding: { productName: 'Gamma Cloud', primaryColor: '#112233' }, source: 'TENANT' });
    expect(brandings.get('acme')).toEqual({ branding: { productName: 'Acme Platform' }, source: 'BRANDING_DEFAULT' });
  });

  it('confirms registered names to the Governor, after commit and at start', async () => {
    // Both the command (at once, in this process) and the tenants projection (in every process) confirm.
    expect([...new Set(confirmed)].sort()).toEqual(['acme', 'beta', 'gamma']);
    const replayed: string[] = [];
    await rebuildProjection(h.db, h.store, createTenantsProjection({ confirmTenant: (name) => replayed.push(name) }));
    expect(replayed.sort()).toEqual(['acme', 'beta', 'gamma']);
    const atStart: string[] = [];
    const loaded = await loadLimitsAndFollowChanges(h.db, [
      {
        learnLimits: (records) => [...records].map((record) => atStart.push(record.tenantId)).length,
        reloadLimits: () => {},
      },
    ]);
    await loaded.close();
    expect(loaded.preload.tenants).toBe(3);
    expect(atStart.sort()).toEqual(['acme', 'beta', 'gamma']);
  });

  it('is a LimitSource the Governor enforces', async () => {
    const source = createReadModelLimitSource(h.db, () => h.clock.now);
    const records = await source.loadTenants(['gamma', 'nobody']);
    expect(records.get('gamma')).toMatchObject({ tenantId: 'gamma', tierId: 'gold', levels: { AI_INFERENCE: { override: { ratePerSecond: 50, burst: 60 } } } });
    expect(records.has('nobody')).toBe(false);
    expect(await source.loadPlatformDefaults()).toEqual({ INGEST: { ratePerSecond: 800, burst: 1600 } });

    const governor = new Governor({ limitSource: source });
    try {
      await waitFor(
        () => {
          const decision = governor.admit({ tenant: 'gamma', dimension: 'AI_INFERENCE', units: 1, at: Date.now() });
          return decision.source === 'TENANT_OVERRIDE' && decision.limit === 50;
        },
        { description: "the Governor enforcing gamma's override" },
      );
    } finally {
      await governor.close();
    }
  });

  // Last: it changes gamma's override and moves the clock past its expiry.
  it('has the running Governor enforce a changed override within the cache TTL, and drop it at its expiry', async () => {
    const governor = new Governor({ limitSource: createReadModelLimitSource(h.db, () => h.clock.now), cacheTtlMs: 50, retryMs: 50 });
    const admitGamma = () => governor.admit({ tenant: 'gamma', dimension: 'AI_INFERENCE', units: 1, at: Date.now() });
    try {
      await waitFor(() => admitGamma().limit === 50, { description: 'the override of 50/s enforced' });
      applied(
        await h.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'gamma', dimension: 'AI_INFERENCE', ratePerSecond: 70, burst: 80, reason: 'more', expiresAt: overrideExpiresAt }),
      );
      await h.caughtUp();
      await waitFor(() => admitGamma().limit === 70, { description: 'the changed override of 70/s enforced' });
      h.clock.now = overrideExpiresAt;
      await waitFor(
        () => {
          const decision = admitGamma();
          return decision.source === 'SHIPPED_DEFAULT' && decision.limit === 5;
        },
        { description: 'the lapsed override no longer enforced' },
      );
    } finally {
      await governor.close();
    }
  });
});

function applied(result: ControlPlaneResult): void {
  expect(result.status === 'failed' ? result.error : 'applied').toBe('applied');
}

function countingQueries(inner: Queryable): Queryable & { count: number } {
  const counting = {
    count: 0,
    query: ((sql: string, params?: readonly unknown[]) => {
      counting.count++;
      return inner.query(sql, params);
    }) as Queryable['query'],
    exec: (sql: string) => inner.exec(sql),
  };
  return counting;
}
