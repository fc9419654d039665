// Limit change requests on PostgreSQL (src/control-plane/change-requests): two-person approval with a refused
// self-approval, rejection, expiry, withdrawal, the bounds of effectiveFrom, and a scheduled change laid over
// the read models from its instant, then appended once however many processes apply it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../../src/control-plane/controlPlaneCommand.ts';
import {
  effectiveLimitTimeline,
  instantOf,
  limitHistory,
  listLimitChangeRequests,
  loadEffectiveLimits,
  resolveTenantLimit,
  type LimitChangeResult,
} from '../../../src/control-plane/index.ts';
import { limitChangeRequestStream, tierStream } from '../../../src/ledger/index.ts';
import { postgresOnly } from '../../support/databases.ts';
import { OPERATOR, openControlPlane, type ControlPlaneHarness } from '../../support/controlPlaneHarness.ts';

const BOB: Caller = { id: 'bob@ops', role: 'OPERATOR' };
const AUDITOR: Caller = { id: 'eve@audit', role: 'AUDITOR' };
const HOUR_MS = 3_600_000;

function changeIdOf(result: LimitChangeResult, status: 'pending-approval' | 'scheduled'): string {
  if (result.status !== status) throw new Error(`expected ${status}, got ${JSON.stringify(result)}`);
  return result.changeId;
}

function applied(result: LimitChangeResult): void {
  if (result.status !== 'applied') throw new Error(`not applied: ${JSON.stringify(result)}`);
}

function failedWith(result: LimitChangeResult, kind: string): void {
  if (result.status !== 'failed' || result.error.kind !== kind) throw new Error(`expected ${kind}, got ${JSON.stringify(result)}`);
}

describe.skipIf(!postgresOnly)('limit change requests on PostgreSQL', () => {
  let h: ControlPlaneHarness;

  beforeAll(async () => {
    h = await openControlPlane(postgresOnly!, { project: true, start: new Date('2026-03-01T00:00:00.000Z') });
    applied(await h.controlPlane.defineTier(OPERATOR, { tierId: 'gold', name: 'Gold' }));
    applied(await h.controlPlane.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 100, burst: 200 }));
    applied(await h.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'gold' }));
    applied(
      await h.controlPlane.setLimitApprovals(OPERATOR, {
        tierChanges: true,
        platformChanges: true,
        overrideAboveTimes: 10,
        expirySeconds: 3_600,
        reason: 'two pairs of eyes on wide changes',
      }),
    );
  });

  afterAll(async () => {
    await h?.close();
  });

  it('asks a second operator for a tier change, refuses the proposer, and records both in the history', async () => {
    const changeId = changeIdOf(
      await h.controlPlane.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 50, burst: 100, reason: 'gold is oversold' }),
      'pending-approval',
    );
    failedWith(await h.controlPlane.approveLimitChange(OPERATOR, { changeId, reason: 'looks fine to me' }), 'Forbidden');
    failedWith(await h.controlPlane.approveLimitChange(AUDITOR, { changeId }), 'Forbidden');
    await h.caughtUp();
    expect(await resolveTenantLimit(h.db, 'acme', 'INGEST', h.clock.now)).toMatchObject({ value: { ratePerSecond: 100 } });
    expect((await listLimitChangeRequests(h.db, { states: ['PENDING_APPROVAL'], now: h.clock.now })).map((each) => each.changeId)).toEqual([changeId]);

    h.clock.advance(60_000);
    applied(await h.controlPlane.approveLimitChange(BOB, { changeId, reason: 'agreed with sales' }));
    await h.caughtUp();
    expect(await resolveTenantLimit(h.db, 'acme', 'INGEST', h.clock.now)).toMatchObject({ value: { ratePerSecond: 50 }, source: 'TIER' });
    const [request] = await listLimitChangeRequests(h.db, { tierId: 'gold', now: h.clock.now });
    expect(request).toMatchObject({ changeId, state: 'APPLIED', proposer: 'alice@ops', proposerReason: 'gold is oversold', decidedBy: 'bob@ops', decisionReason: 'agreed with sales' });
    const history = await limitHistory(h.db, { tierId: 'gold', dimension: 'INGEST', now: h.clock.now });
    expect(history.nodes[0]).toMatchObject({
      kind: 'TIER_LIMIT_SET',
      actor: 'alice@ops',
      reason: 'gold is oversold',
      value: { ratePerSecond: 50, burst: 100 },
      approval: { changeId, proposedBy: 'alice@ops', proposerReason: 'gold is oversold', approvedBy: 'bob@ops', approverReason: 'agreed with sales' },
    });
    expect(history.nodes[0]!.approval!.approvedAt).toBe(h.clock.now.toISOString());
    // Approved once: a second approval finds it applied.
    failedWith(await h.controlPlane.approveLimitChange(BOB, { changeId }), 'InvalidInput');
  });

  it('rejects with a reason, and an override only above N times the tier needs approval', async () => {
    applied(await h.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 400, reason: 'up to 8 x needs no one' }));
    const changeId = changeIdOf(
      await h.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 5_000, reason: 'launch day' }),
      'pending-approval',
    );
    failedWith(await h.controlPlane.rejectLimitChange(BOB, { changeId }), 'InvalidInput');
    applied(await h.controlPlane.rejectLimitChange(BOB, { changeId, reason: '100 x the tier is too much' }));
    failedWith(await h.controlPlane.approveLimitChange(BOB, { changeId }), 'InvalidInput');
    await h.caughtUp();
    expect(await resolveTenantLimit(h.db, 'acme', 'INGEST', h.clock.now)).toMatchObject({ value: { ratePerSecond: 400 }, source: 'TENANT_OVERRIDE' });
    const [request] = await listLimitChangeRequests(h.db, { tenantId: 'acme', states: ['REJECTED'], now: h.clock.now });
    expect(request).toMatchObject({ changeId, decidedBy: 'bob@ops', decisionReason: '100 x the tier is too much' });
  });

  it('expires an unapproved request after the set time', async () => {
    const changeId = changeIdOf(
      await h.controlPlane.setPlatformDefault(OPERATOR, { dimension: 'PROVISIONING', ratePerSecond: 7, reason: 'tidy up' }),
      'pending-approval',
    );
    h.clock.advance(HOUR_MS);
    failedWith(await h.controlPlane.approveLimitChange(BOB, { changeId }), 'InvalidInput');
    await h.caughtUp();
    const [request] = await listLimitChangeRequests(h.db, { states: ['EXPIRED'], now: h.clock.now });
    expect(request).toMatchObject({ changeId, state: 'EXPIRED' });
    expect(await listLimitChangeRequests(h.db, { states: ['PENDING_APPROVAL'], now: h.clock.now })).toEqual([]);
  });

  it('lays a scheduled change over the read models from its instant, and appends it once however many apply it', async () => {
    applied(await h.controlPlane.setLimitApprovals(OPERATOR, { tierChanges: false, platformChanges: false }));
    const instant = new Date(h.clock.now.getTime() + HOUR_MS);
    const changeId = changeIdOf(
      await h.controlPlane.setTierLimit(BOB, { tierId: 'gold', dimension: 'PROVISIONING', ratePerSecond: 3, reason: 'quiet hours', effectiveFrom: instant }),
      'scheduled',
    );
    await h.caughtUp();
    const provisioning = async (at: Date) => (await loadEffectiveLimits(h.db, ['acme'], at)).get('acme')!.limits.find((each) => each.dimension === 'PROVISIONING');
    expect(await provisioning(new Date(instant.getTime() - 1))).toMatchObject({ source: 'SHIPPED_DEFAULT' });
    expect(await provisioning(instant)).toMatchObject({ value: { ratePerSecond: 3 }, source: 'TIER' });
    failedWith(await h.controlPlane.applyLimitChange(changeId), 'InvalidInput');

    h.clock.advance(HOUR_MS + 5);
    const results = await Promise.all([h.controlPlane.applyLimitChange(changeId), h.controlPlane.applyLimitChange(changeId), h.controlPlane.applyLimitChange(changeId)]);
    for (const result of results) applied(result);
    const appended = (await h.store.readStream(tierStream('gold'))).filter((event) => event.metadata.changeId === changeId);
    expect(appended).toHaveLength(1);
    expect(appended[0]!.metadata.occurredAt).toBe(instant.toISOString());
    await h.caughtUp();
    expect(await provisioning(h.clock.now)).toMatchObject({ value: { ratePerSecond: 3 }, source: 'TIER' });
    failedWith(await h.controlPlane.withdrawLimitChange(BOB, { changeId }), 'InvalidInput');
  });

  it('shows an open request in the effective-limit timeline at its instant, marked pending', async () => {
    const instant = new Date(h.clock.now.getTime() + HOUR_MS);
    const changeId = changeIdOf(
      await h.controlPlane.setTenantOverride(BOB, { tenantId: 'acme', dimension: 'EGRESS', ratePerSecond: 9, reason: 'night', effectiveFrom: instant }),
      'scheduled',
    );
    await h.caughtUp();
    const open = await listLimitChangeRequests(h.db, { tenantId: 'acme', states: ['SCHEDULED'], now: h.clock.now });
    const pending = open.map((request) => ({ changeId: request.changeId, at: instantOf(request), planned: request.planned, proposer: request.proposer, reason: request.proposerReason }));
    const timeline = await effectiveLimitTimeline(h.store, {
      tenantId: 'acme',
      dimension: 'EGRESS',
      from: new Date(h.clock.now.getTime() - HOUR_MS),
      to: new Date(h.clock.now.getTime() + 2 * HOUR_MS),
      now: h.clock.now,
      pending,
    });
    expect(timeline).toEqual([
      expect.objectContaining({ at: instant, cause: 'OVERRIDE_SET', value: { ratePerSecond: 9, burst: 18 }, source: 'TENANT_OVERRIDE', pending: true, changeId, actor: 'bob@ops' }),
    ]);
    applied(await h.controlPlane.withdrawLimitChange(BOB, { changeId }));
  });

  it('withdraws a scheduled change before its instant: it never applies', async () => {
    const changeId = changeIdOf(
      await h.controlPlane.clearTierLimit(OPERATOR, { tierId: 'gold', dimension: 'PROVISIONING', effectiveFrom: new Date(h.clock.now.getTime() + HOUR_MS) }),
      'scheduled',
    );
    failedWith(await h.controlPlane.withdrawLimitChange(AUDITOR, { changeId }), 'Forbidden');
    applied(await h.controlPlane.withdrawLimitChange(BOB, { changeId, reason: 'keep quiet hours' }));
    h.clock.advance(2 * HOUR_MS);
    failedWith(await h.controlPlane.applyLimitChange(changeId), 'InvalidInput');
    await h.caughtUp();
    expect(await resolveTenantLimit(h.db, 'acme', 'PROVISIONING', h.clock.now)).toMatchObject({ value: { ratePerSecond: 3 }, source: 'TIER' });
    const withdrawn = await listLimitChangeRequests(h.db, { states: ['WITHDRAWN'], now: h.clock.now });
    expect(withdrawn.find((request) => request.changeId === changeId)).toMatchObject({ decidedBy: 'bob@ops', decisionReason: 'keep quiet hours' });
  });

  it('bounds effectiveFrom: not more than 60 s past, not more than 366 days ahead; nothing is appended', async () => {
    const before = (await h.store.readStream(tierStream('gold'))).length;
    failedWith(
      await h.controlPlane.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 9, effectiveFrom: new Date(h.clock.now.getTime() - 61_000) }),
      'InvalidInput',
    );
    failedWith(
      await h.controlPlane.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 9, effectiveFrom: new Date(h.clock.now.getTime() + 367 * 24 * HOUR_MS) }),
      'InvalidInput',
    );
    failedWith(await h.controlPlane.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 9, effectiveFrom: 'soon' }), 'InvalidInput');
    failedWith(await h.controlPlane.approveLimitChange(BOB, { changeId: 'not-an-id' }), 'InvalidInput');
    expect((await h.store.readStream(tierStream('gold'))).length).toBe(before);
    expect(await h.store.readStream(limitChangeRequestStream('00000000-0000-0000-0000-000000000000'))).toEqual([]);
    // Within the skew, a past instant means now.
    applied(await h.controlPlane.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 60, effectiveFrom: new Date(h.clock.now.getTime() - 30_000) }));
  });
});
