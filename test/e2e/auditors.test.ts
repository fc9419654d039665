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
    const expiresAt = new Date(Date.now() + 1500).toISOString();
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
});
