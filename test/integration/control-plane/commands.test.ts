// Given/when/then on the real ledger: the command appends exactly the one event the decider chose, with
// the caller's identity, reason and time in its metadata, or a typed error and nothing at all.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { LimitChangeResult as ControlPlaneResult } from '../../../src/control-plane/change-requests/runRequests.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { OPERATOR, openControlPlane, type ControlPlaneHarness, SETUP_TIMEOUT_MS } from '../../support/controlPlaneHarness.ts';

describeOnEachStorage('control-plane commands on $name', (target) => {
  let h: ControlPlaneHarness;
  beforeAll(async () => {
    h = await openControlPlane(target);
    expectApplied(await h.controlPlane.defineTier(OPERATOR, { tierId: 'silver', name: 'Silver' }));
    expectApplied(await h.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'silver' }));
  }, SETUP_TIMEOUT_MS);
  afterAll(() => h.close());

  const eventCount = async () => Number((await h.db.query<{ n: string }>('SELECT count(*)::text AS n FROM gl_events')).rows[0]!.n);

  it('given a tenant, when an override is set, then one event with the actor, reason and time is appended', async () => {
    const input = { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 4000, burst: 8000, reason: 'firmware rollout', actor: 'mallory' };
    const result = await h.controlPlane.setTenantOverride({ id: 'bob@ops', role: 'OPERATOR' }, input);
    expectApplied(result);
    const last = (await h.store.readStream('tenant-acme', { direction: 'backwards', maxCount: 1 }))[0]!;
    expect(last.type).toBe('TenantOverrideSet');
    expect(last.data).toEqual({ tenantId: 'acme', dimension: 'INGEST', previous: null, value: { ratePerSecond: 4000, burst: 8000 }, expiresAt: null });
    // The actor is the caller's identity: an `actor` smuggled into the input changes nothing.
    expect(last.metadata).toMatchObject({ actor: 'bob@ops', actorRole: 'OPERATOR', reason: 'firmware rollout', occurredAt: h.clock.now.toISOString() });
    expect(result.status === 'applied' && result.position).toEqual(last.position);
  });

  it.each([
    ['an invalid limit', 'setTierLimit', { tierId: 'silver', dimension: 'INGEST', ratePerSecond: 0 }, 'InvalidLimit'],
    ['a ceiling for a rate dimension', 'setTierLimit', { tierId: 'silver', dimension: 'EGRESS', ratePerSecond: 5, ceiling: 5 }, 'InvalidLimit'],
    ['an unknown tier', 'setTierLimit', { tierId: 'bronze', dimension: 'INGEST', ratePerSecond: 5 }, 'UnknownTier'],
    ['an unknown tenant', 'clearTenantOverride', { tenantId: 'ghost', dimension: 'INGEST', reason: 'x' }, 'UnknownTenant'],
    ['an unknown dimension', 'setPlatformDefault', { dimension: 'DISK', ratePerSecond: 5 }, 'UnknownDimension'],
    ['an empty reason', 'setTenantOverride', { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 5, reason: '' }, 'InvalidInput'],
    ['a past expiresAt', 'setTenantOverride', { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 5, reason: 'x', expiresAt: '2020-01-01T00:00:00Z' }, 'InvalidInput'],
    ['a tier defined twice', 'defineTier', { tierId: 'silver', name: 'Again' }, 'TierAlreadyDefined'],
    ['a tenant registered twice', 'registerTenant', { tenantId: 'acme' }, 'TenantAlreadyRegistered'],
  ] as const)('when given %s, then a typed error and nothing is appended', async (_name, command, input, kind) => {
    const before = await eventCount();
    const run = h.controlPlane[command] as (actor: typeof OPERATOR, input: unknown) => Promise<ControlPlaneResult>;
    const result = await run(OPERATOR, input);
    expect(result).toMatchObject({ status: 'failed', error: { kind } });
    expect(await eventCount()).toBe(before);
  });

  it('refuses a caller whose role may not change limits, appending nothing', async () => {
    const before = await eventCount();
    const result = await h.controlPlane.setTierLimit({ id: 'eve', role: 'AUDITOR' }, { tierId: 'silver', dimension: 'INGEST', ratePerSecond: 5 });
    expect(result).toMatchObject({ status: 'failed', error: { kind: 'Forbidden' } });
    expect(await eventCount()).toBe(before);
  });

  it('lets a tenant admin choose its own API over-limit policy', async () => {
    const admin = { id: 'carol@acme', role: 'TENANT_ADMIN' as const, tenantId: 'acme' };
    expectApplied(await h.controlPlane.setTenantOverLimitPolicy(admin, { tenantId: 'acme', policy: 'STABLE_DOWNSAMPLE' }));
    const last = (await h.store.readStream('tenant-acme', { direction: 'backwards', maxCount: 1 }))[0]!;
    expect(last).toMatchObject({ type: 'TenantOverLimitPolicySet', data: { policy: 'STABLE_DOWNSAMPLE' }, metadata: { actor: 'carol@acme' } });
  });

  it('keeps occurredAt from going back within a stream when the clock does', async () => {
    const later = h.clock.advance(60_000);
    expectApplied(await h.controlPlane.setTierLimit(OPERATOR, { tierId: 'silver', dimension: 'AI_INFERENCE', ratePerSecond: 7 }));
    h.clock.advance(-120_000);
    expectApplied(await h.controlPlane.setTierLimit(OPERATOR, { tierId: 'silver', dimension: 'AI_INFERENCE', ratePerSecond: 8 }));
    const last = (await h.store.readStream('tier-silver', { direction: 'backwards', maxCount: 1 }))[0]!;
    expect(last.metadata.occurredAt).toBe(later.toISOString());
    h.clock.advance(60_000);
  });
});

function expectApplied(result: ControlPlaneResult): void {
  expect(result.status === 'failed' ? result.error : 'applied').toBe('applied');
}
