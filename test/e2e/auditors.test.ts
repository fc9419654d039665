// What an auditor asks of the running service over HTTP: who made a limit lapse, and what a tenant's limits
// were before it was registered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { serviceClient, type ServiceClient } from '../support/serviceClient.ts';
import { waitFor } from '../support/waitFor.ts';

const EMBEDDED = { name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} };

describe('auditors over HTTP', () => {
  let running: RunningService;
  let api: ServiceClient;
  let registeredAt: Date;

  beforeAll(async () => {
    running = await startServiceIn(EMBEDDED);
    api = await serviceClient(running);
    const operator = api.as('OPERATOR');
    await operator('mutation { defineTier(input: { tierId: "standard", name: "Standard" }) { __typename } }');
    registeredAt = new Date();
    const registered = await operator<{ registerTenant: { __typename: string } }>(
      'mutation { registerTenant(input: { tenantId: "acme", tierId: "standard" }) { __typename } }',
    );
    expect(registered.registerTenant.__typename).toBe('Applied');
  }, 180_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('names the system, with reason "expired", as the actor of an override that lapses', async () => {
    // Far enough ahead that the mutation still finds it in the future on a loaded machine.
    const expiresAt = new Date(Date.now() + 6000).toISOString();
    const set = await api.as('OPERATOR')<{ setTenantOverride: { __typename: string } }>(
      `mutation($expiresAt: DateTime!) { setTenantOverride(input: { tenantId: "acme", dimension: INGEST, ratePerSecond: 5, reason: "trial", expiresAt: $expiresAt }) { __typename } }`,
      { expiresAt },
    );
    expect(set.setTenantOverride.__typename).toBe('Applied');
    const auditor = api.as('AUDITOR');
    type History = { limitHistory: { edges: Array<{ node: { kind: string; actor: string; reason: string | null; at: string } }> } };
    let history: History | undefined;
    await waitFor(
      async () => {
        history = await auditor<History>('{ limitHistory(tenantId: "acme", dimension: INGEST, first: 5) { edges { node { kind actor reason at } } } }');
        return history.limitHistory.edges[0]?.node.kind === 'OVERRIDE_EXPIRED';
      },
      { timeoutMs: 30_000, intervalMs: 200, description: 'the lapse in limitHistory' },
    );
    const [lapse, setting] = history!.limitHistory.edges.map((edge) => edge.node);
    expect(lapse).toEqual({ kind: 'OVERRIDE_EXPIRED', actor: 'system:override-expiry', reason: 'expired', at: expiresAt });
    expect(setting).toMatchObject({ kind: 'OVERRIDE_SET', actor: 'e2e-operator', reason: 'trial' });
  }, 60_000);

  it('says a tenant was not registered at an instant before its registration, and when it was', async () => {
    const auditor = await api.token('AUDITOR');
    const before = new Date(registeredAt.getTime() - 60_000).toISOString();
    const answer = await api.gql(auditor, 'query($at: DateTime!) { effectiveLimitsAt(tenantId: "acme", at: $at) { source } }', { at: before });
    expect(answer.status).toBe(200);
    expect(answer.errors?.[0]?.extensions?.code).toBe('NOT_REGISTERED_AT');
    expect(answer.errors?.[0]?.message).toMatch(new RegExp(`^tenant "acme" was not registered at ${before.replace(/[.]/g, '\\.')}: it was registered at `));
    const never = await api.gql(auditor, 'query($at: DateTime!) { effectiveLimitsAt(tenantId: "nobody", at: $at) { source } }', { at: before });
    expect(never.errors?.[0]?.message).toMatch(/was not registered at .*, and is not registered now/);
  });

  it('lists every change of the effective limit, whatever level caused it, with before, after, winner, actor and reason', async () => {
    const operator = api.as('OPERATOR');
    const run = async (mutation: string) => {
      const data = await operator<Record<string, { __typename: string }>>(`mutation { ${mutation} { __typename } }`);
      expect(Object.values(data)[0]!.__typename, mutation).toBe('Applied');
    };
    await run('setPlatformDefault(input: { dimension: INGEST, ratePerSecond: 800, burst: 1600, reason: "platform" })');
    await run('setTierLimit(input: { tierId: "standard", dimension: INGEST, ratePerSecond: 2000, burst: 4000, reason: "standard package" })');
    await run('setTenantOverride(input: { tenantId: "acme", dimension: INGEST, ratePerSecond: 9000, burst: 9000, reason: "backfill" })');
    await run('defineTier(input: { tierId: "gold", name: "Gold" })');
    await run('setTierLimit(input: { tierId: "gold", dimension: INGEST, ratePerSecond: 5000, burst: 10000, reason: "gold package" })');
    await run('setTierLimit(input: { tierId: "standard", dimension: EGRESS, ratePerSecond: 10, reason: "another dimension" })');
    await run('clearTenantOverride(input: { tenantId: "acme", dimension: INGEST, reason: "backfill done" })');
    await run('assignTenantTier(input: { tenantId: "acme", tierId: "gold", reason: "upgrade" })');

    type Change = { cause: string; previous: { ratePerSecond: number } | null; value: { ratePerSecond: number }; previousSource: string | null; source: string; tierId: string; actor: string; reason: string | null };
    const { effectiveLimitTimeline } = await api.as('AUDITOR')<{ effectiveLimitTimeline: Change[] }>(
      `query($from: DateTime!, $to: DateTime!) { effectiveLimitTimeline(tenantId: "acme", dimension: INGEST, from: $from, to: $to) {
        cause previous { ratePerSecond } previousSource value { ratePerSecond } source tierId actor reason } }`,
      { from: new Date(registeredAt.getTime() - 1000).toISOString(), to: new Date(Date.now() + 1000).toISOString() },
    );
    const shipped = effectiveLimitTimeline[0]!.value.ratePerSecond;
    expect(effectiveLimitTimeline.map(({ cause, previous, value, source, actor, reason }) => [cause, previous?.ratePerSecond ?? null, value.ratePerSecond, source, actor, reason])).toEqual([
      ['TENANT_REGISTERED', null, shipped, 'SHIPPED_DEFAULT', 'e2e-operator', null],
      ['OVERRIDE_SET', shipped, 5, 'TENANT_OVERRIDE', 'e2e-operator', 'trial'],
      ['OVERRIDE_EXPIRED', 5, shipped, 'SHIPPED_DEFAULT', 'system:override-expiry', 'expired'],
      ['PLATFORM_DEFAULT_SET', shipped, 800, 'PLATFORM_DEFAULT', 'e2e-operator', 'platform'],
      ['TIER_LIMIT_SET', 800, 2000, 'TIER', 'e2e-operator', 'standard package'],
      ['OVERRIDE_SET', 2000, 9000, 'TENANT_OVERRIDE', 'e2e-operator', 'backfill'],
      ['OVERRIDE_CLEARED', 9000, 2000, 'TIER', 'e2e-operator', 'backfill done'],
      ['TENANT_TIER_ASSIGNED', 2000, 5000, 'TIER', 'e2e-operator', 'upgrade'],
    ]);
    expect(effectiveLimitTimeline.at(-1)).toMatchObject({ previousSource: 'TIER', tierId: 'gold' });
  });
});

