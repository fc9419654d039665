// Two-person approval through GraphQL on PostgreSQL: the approvals setting, a tier change answered
// PendingApproval, the proposer's own approval answered Forbidden (operators told apart by the token's
// subject), a second operator's approval Applied, the queue, and limitHistory naming both.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../../src/auth/token.ts';
import { postgresOnly } from '../../support/databases.ts';
import { openApiHarness, TEST_SECRET, type ApiHarness } from './apiHarness.ts';

type Payload = { __typename: string; changeId?: string; message?: string };
const LIMIT_MUTATIONS = ['setPlatformDefault', 'setTierLimit', 'clearTierLimit', 'setTenantOverride', 'clearTenantOverride'];
const DECISIONS = ['approveLimitChange', 'rejectLimitChange', 'withdrawLimitChange'];

/** Each union has the members its mutation can answer: a fragment on another type is refused by validation. */
function payloadOf(name: string): string {
  const pending = LIMIT_MUTATIONS.includes(name) ? ' ... on PendingApproval { changeId }' : '';
  const scheduled = LIMIT_MUTATIONS.includes(name) || DECISIONS.includes(name) ? ' ... on ScheduledLimitChange { changeId }' : '';
  return `{ __typename${pending}${scheduled} ... on Error { message } }`;
}

describe.skipIf(!postgresOnly)('two-person approval through GraphQL on PostgreSQL', () => {
  let api: ApiHarness;
  let alice: string;
  let bob: string;

  async function mutate(token: string, name: string, inputType: string, input: Record<string, unknown>): Promise<Payload> {
    const response = await api.gql<Record<string, Payload>>(token, `mutation($input: ${inputType}!) { ${name}(input: $input) ${payloadOf(name)} }`, { input });
    expect(response.errors, JSON.stringify(response.errors)).toBeUndefined();
    return response.data![name]!;
  }

  beforeAll(async () => {
    api = await openApiHarness(postgresOnly!);
    alice = await mintToken({ secret: TEST_SECRET, role: 'OPERATOR', sub: 'alice@ops', ttl: '10m' });
    bob = await mintToken({ secret: TEST_SECRET, role: 'OPERATOR', sub: 'bob@ops', ttl: '10m' });
  }, 180_000);
  afterAll(() => api?.dispose());

  it('asks a second operator, refuses the proposer, and the history names both', async () => {
    expect((await mutate(alice, 'defineTier', 'DefineTierInput', { tierId: 'gold', name: 'Gold' })).__typename).toBe('Applied');
    const approvals = { tierChanges: true, platformChanges: false, overrideAboveTimes: 5, expirySeconds: 3600, reason: 'four eyes' };
    expect((await mutate(alice, 'setLimitApprovals', 'SetLimitApprovalsInput', approvals)).__typename).toBe('Applied');
    const setting = await api.gql<{ limitApprovals: unknown }>(alice, '{ limitApprovals { tierChanges platformChanges overrideAboveTimes expirySeconds } }');
    expect(setting.data!.limitApprovals).toEqual({ tierChanges: true, platformChanges: false, overrideAboveTimes: 5, expirySeconds: 3600 });

    const proposed = await mutate(alice, 'setTierLimit', 'SetTierLimitInput', { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 70, reason: 'oversold' });
    expect(proposed.__typename).toBe('PendingApproval');
    const changeId = proposed.changeId!;
    expect((await mutate(alice, 'approveLimitChange', 'LimitChangeDecisionInput', { changeId })).__typename).toBe('Forbidden');
    const auditor = await api.token('AUDITOR');
    expect((await mutate(auditor, 'approveLimitChange', 'LimitChangeDecisionInput', { changeId })).__typename).toBe('Forbidden');
    await api.projections.waitForCaughtUp();

    const queue = await api.gql<{ limitChangeRequests: Array<{ changeId: string; proposer: string; approvableByViewer: boolean }> }>(
      bob,
      '{ limitChangeRequests(states: [PENDING_APPROVAL]) { changeId proposer approvableByViewer } }',
    );
    expect(queue.data!.limitChangeRequests).toEqual([{ changeId, proposer: 'alice@ops', approvableByViewer: true }]);

    expect((await mutate(bob, 'approveLimitChange', 'LimitChangeDecisionInput', { changeId, reason: 'agreed' })).__typename).toBe('Applied');
    await api.projections.waitForCaughtUp();
    const history = await api.gql<{ limitHistory: { edges: Array<{ node: { actor: string; approval: Record<string, unknown> | null } }> } }>(
      bob,
      '{ limitHistory(tierId: "gold", first: 1) { edges { node { actor approval { changeId proposedBy proposerReason approvedBy approverReason approvedAt } } } } }',
    );
    expect(history.data!.limitHistory.edges[0]!.node).toMatchObject({
      actor: 'alice@ops',
      approval: { changeId, proposedBy: 'alice@ops', proposerReason: 'oversold', approvedBy: 'bob@ops', approverReason: 'agreed' },
    });
  });

  it('answers a future effectiveFrom with ScheduledLimitChange and lists it as pending on the effective limit', async () => {
    expect((await mutate(alice, 'registerTenant', 'RegisterTenantInput', { tenantId: 'acme', tierId: 'gold' })).__typename).toBe('Applied');
    const effectiveFrom = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await mutate(alice, 'setTenantOverride', 'SetTenantOverrideInput', {
      tenantId: 'acme',
      dimension: 'EGRESS',
      ratePerSecond: 20,
      reason: 'night',
      effectiveFrom,
    });
    expect(scheduled.__typename).toBe('ScheduledLimitChange');
    await api.projections.waitForCaughtUp();
    const limits = await api.gql<{ effectiveLimits: Array<{ dimension: string; pending: Array<{ changeId: string; state: string; effectiveFrom: string }> }> }>(
      alice,
      '{ effectiveLimits(tenantId: "acme") { dimension pending { changeId state effectiveFrom } } }',
    );
    const egress = limits.data!.effectiveLimits.find((limit) => limit.dimension === 'EGRESS')!;
    expect(egress.pending).toEqual([{ changeId: scheduled.changeId, state: 'SCHEDULED', effectiveFrom }]);
    expect((await mutate(alice, 'setTierLimit', 'SetTierLimitInput', { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 9, effectiveFrom: '2020-01-01T00:00:00Z' })).__typename).toBe(
      'InvalidInput',
    );
  });

  it('asks a second operator for a platform default set in shadow, shows it as a shadow in the queue, and platformDefaults after approval', async () => {
    const approvals = { tierChanges: true, platformChanges: true, overrideAboveTimes: 5, expirySeconds: 3600, reason: 'platform too' };
    expect((await mutate(alice, 'setLimitApprovals', 'SetLimitApprovalsInput', approvals)).__typename).toBe('Applied');
    const proposed = await mutate(alice, 'setPlatformDefault', 'SetPlatformDefaultInput', { dimension: 'EGRESS', ratePerSecond: 5, burst: 10, mode: 'SHADOW', reason: 'watch 5/s' });
    expect(proposed.__typename).toBe('PendingApproval');
    await api.projections.waitForCaughtUp();
    const queue = await api.gql<{ limitChangeRequests: Array<{ changeId: string; mode: string; value: unknown; previous: unknown }> }>(
      bob,
      '{ limitChangeRequests(states: [PENDING_APPROVAL]) { changeId mode value { ratePerSecond burst } previous { ratePerSecond } } }',
    );
    expect(queue.data!.limitChangeRequests).toEqual([{ changeId: proposed.changeId, mode: 'SHADOW', value: { ratePerSecond: 5, burst: 10 }, previous: null }]);
    expect((await mutate(bob, 'approveLimitChange', 'LimitChangeDecisionInput', { changeId: proposed.changeId, reason: 'fine' })).__typename).toBe('Applied');
    await api.projections.waitForCaughtUp();
    const defaults = await api.gql<{ platformDefaults: Array<{ dimension: string; value: unknown; shadow: unknown }> }>(bob, '{ platformDefaults { dimension value { ratePerSecond } shadow { ratePerSecond burst } } }');
    expect(defaults.data!.platformDefaults.find((each) => each.dimension === 'EGRESS')).toEqual({ dimension: 'EGRESS', value: null, shadow: { ratePerSecond: 5, burst: 10 } });
    const history = await api.gql<{ limitHistory: { edges: Array<{ node: { kind: string; mode: string; approval: { approvedBy: string } | null } }> } }>(
      bob,
      '{ limitHistory(dimension: EGRESS, first: 1) { edges { node { kind mode approval { approvedBy } } } } }',
    );
    expect(history.data!.limitHistory.edges[0]!.node).toEqual({ kind: 'PLATFORM_SHADOW_DEFAULT_SET', mode: 'SHADOW', approval: { approvedBy: 'bob@ops' } });
  });
});
