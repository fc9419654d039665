// The control-plane mutations with their typed results, and the limit queries that read what they changed.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnEachStorage } from '../../support/databases.ts';
import { openApiHarness, type ApiHarness } from './apiHarness.ts';
import { readWholeLedger } from '../../support/readLedger.ts';

type Payload = { __typename: string; position?: string; field?: string | null; message?: string };

describeOnEachStorage('GraphQL limits on $name', (target) => {
  let api: ApiHarness;
  let operator: string;

  const PAYLOAD = '{ __typename ... on Applied { position } ... on Error { message } ... on InputError { field } }';

  async function mutate(name: string, input: string, token = operator): Promise<Payload> {
    const response = await api.gql<Record<string, Payload>>(token, `mutation { ${name}(input: { ${input} }) ${PAYLOAD} }`);
    expect(response.errors, `${name}: ${JSON.stringify(response.errors)}`).toBeUndefined();
    return response.data![name]!;
  }

  // Opening a database takes long on a busy machine (hence the hook's timeout); the tests themselves are quick.
  beforeAll(async () => {
    api = await openApiHarness(target);
    operator = await api.token('OPERATOR');
  }, 180_000);
  afterAll(() => api?.dispose());

  it('runs every control-plane mutation and answers Applied with the ledger position', async () => {
    const applied = [
      await mutate('setPlatformDefault', 'dimension: EGRESS, ratePerSecond: 300, burst: 600, reason: "launch"'),
      await mutate('defineTier', 'tierId: "silver", name: "Silver"'),
      await mutate('defineTier', 'tierId: "gold", name: "Gold"'),
      await mutate('setTierLimit', 'tierId: "silver", dimension: INGEST, ratePerSecond: 2000, burst: 4000, reason: "package"'),
      await mutate('setTierLimit', 'tierId: "silver", dimension: UNDELIVERED_COMMANDS, ceiling: 50'),
      await mutate('setTierLimit', 'tierId: "gold", dimension: AI_INFERENCE, ratePerSecond: 50'),
      await mutate('clearTierLimit', 'tierId: "gold", dimension: AI_INFERENCE, reason: "retired"'),
      await mutate('registerTenant', 'tenantId: "acme", tierId: "silver"'),
      await mutate('registerTenant', 'tenantId: "initech"'),
      await mutate('assignTenantTier', 'tenantId: "initech", tierId: "gold", reason: "upgrade"'),
      await mutate('setTenantOverride', 'tenantId: "acme", dimension: INGEST, ratePerSecond: 9000, reason: "big import", expiresAt: "2099-01-01T00:00:00Z"'),
      await mutate('setTenantOverride', 'tenantId: "acme", dimension: PROVISIONING, ratePerSecond: 40, reason: "rollout"'),
      await mutate('clearTenantOverride', 'tenantId: "acme", dimension: PROVISIONING, reason: "rollout done"'),
    ];
    for (const payload of applied) expect(payload).toEqual({ __typename: 'Applied', position: expect.stringMatching(/^\d+:\d+$/) });
    await api.projections.waitForCaughtUp();

    const limits = await api.gql<{ effectiveLimits: Array<{ dimension: string; source: string; tierId: string | null; value: Record<string, number | null> }> }>(
      operator,
      '{ effectiveLimits(tenantId: "acme") { dimension source tierId value { ratePerSecond burst ceiling } } }',
    );
    const byDimension = new Map(limits.data!.effectiveLimits.map((limit) => [limit.dimension, limit]));
    expect(byDimension.get('INGEST')).toMatchObject({ source: 'TENANT_OVERRIDE', tierId: 'silver', value: { ratePerSecond: 9000 } });
    expect(byDimension.get('EGRESS')).toMatchObject({ source: 'PLATFORM_DEFAULT', value: { ratePerSecond: 300, burst: 600 } });
    expect(byDimension.get('UNDELIVERED_COMMANDS')).toMatchObject({ source: 'TIER', value: { ceiling: 50 } });
    expect(byDimension.get('PROVISIONING')).toMatchObject({ source: 'SHIPPED_DEFAULT', value: { ratePerSecond: 20, burst: 500 } });

    const tenant = await api.gql(
      operator,
      '{ tenant(id: "acme") { id tier { id name limits { dimension value { ratePerSecond ceiling } } } overrides { dimension value { ratePerSecond } expiresAt } commandBacklog { tenantId undelivered ceiling source } } missing: tenant(id: "nobody") { id } }',
    );
    expect(tenant.data).toEqual({
      tenant: {
        id: 'acme',
        tier: {
          id: 'silver',
          name: 'Silver',
          limits: [
            { dimension: 'INGEST', value: { ratePerSecond: 2000, ceiling: null } },
            { dimension: 'UNDELIVERED_COMMANDS', value: { ratePerSecond: null, ceiling: 50 } },
          ],
        },
        overrides: [{ dimension: 'INGEST', value: { ratePerSecond: 9000 }, expiresAt: '2099-01-01T00:00:00.000Z' }],
        commandBacklog: { tenantId: 'acme', undelivered: 0, ceiling: 50, source: 'TIER' },
      },
      missing: null,
    });

    const tiers = await api.gql(operator, '{ tiers { id name } }');
    expect(tiers.data).toEqual({ tiers: [{ id: 'gold', name: 'Gold' }, { id: 'silver', name: 'Silver' }] });

    const tenants = await api.gql(operator, '{ tenants { edges { node { id tier { id } } } pageInfo { hasNextPage } } }');
    expect(tenants.data).toEqual({
      tenants: { edges: [{ node: { id: 'acme', tier: { id: 'silver' } } }, { node: { id: 'initech', tier: { id: 'gold' } } }], pageInfo: { hasNextPage: false } },
    });
  });

  it('answers what was in force at a past instant from the ledger', async () => {
    await mutate('registerTenant', 'tenantId: "hooli"');
    const before = new Date();
    await new Promise((resolve) => setTimeout(resolve, 5));
    await mutate('setTenantOverride', 'tenantId: "hooli", dimension: AI_INFERENCE, ratePerSecond: 77, reason: "pilot"');
    const query = 'query($at: DateTime!) { effectiveLimitsAt(tenantId: "hooli", at: $at) { dimension source value { ratePerSecond } } }';
    type At = { effectiveLimitsAt: Array<{ dimension: string; source: string; value: { ratePerSecond: number } }> };
    const then = await api.gql<At>(operator, query, { at: before.toISOString() });
    const now = await api.gql<At>(operator, query, { at: new Date(Date.now() + 1000).toISOString() });
    const ai = (response: typeof then) => response.data!.effectiveLimitsAt.find((limit) => limit.dimension === 'AI_INFERENCE');
    expect(ai(then)).toEqual({ dimension: 'AI_INFERENCE', source: 'SHIPPED_DEFAULT', value: { ratePerSecond: 5 } });
    expect(ai(now)).toEqual({ dimension: 'AI_INFERENCE', source: 'TENANT_OVERRIDE', value: { ratePerSecond: 77 } });

    const unknown = await api.gql(operator, '{ effectiveLimitsAt(tenantId: "hooli", at: "2000-01-01T00:00:00Z") { source } }');
    expect(unknown.errors?.[0]?.extensions?.code).toBe('NOT_REGISTERED_AT');
    expect(unknown.errors?.[0]?.message).toMatch(/^tenant "hooli" was not registered at 2000-01-01T00:00:00.000Z: it was registered at /);
  });

  it('answers bad input with a typed error and appends nothing', async () => {
    const before = (await readWholeLedger(api.store)).length;
    expect(await mutate('setTierLimit', 'tierId: "silver", dimension: INGEST, ratePerSecond: 0')).toMatchObject({ __typename: 'InvalidLimit', field: 'ratePerSecond' });
    expect(await mutate('setTierLimit', 'tierId: "silver", dimension: INGEST, ratePerSecond: 1000001')).toMatchObject({ __typename: 'InvalidLimit' });
    expect(await mutate('setPlatformDefault', 'dimension: UNDELIVERED_COMMANDS, ratePerSecond: 10')).toMatchObject({ __typename: 'InvalidLimit' });
    expect(await mutate('setTierLimit', 'tierId: "platinum", dimension: INGEST, ratePerSecond: 10')).toMatchObject({ __typename: 'UnknownTier' });
    expect(await mutate('assignTenantTier', 'tenantId: "nobody", tierId: "gold"')).toMatchObject({ __typename: 'UnknownTenant' });
    expect(await mutate('registerTenant', 'tenantId: "acme"')).toMatchObject({ __typename: 'TenantAlreadyRegistered' });
    expect(await mutate('defineTier', 'tierId: "gold", name: "Again"')).toMatchObject({ __typename: 'TierAlreadyDefined' });
    expect(await mutate('setTenantOverride', 'tenantId: "acme", dimension: INGEST, ratePerSecond: 5, reason: " "')).toMatchObject({ __typename: 'InvalidInput', field: 'reason' });
    expect(await mutate('defineTier', 'tierId: "bad id!", name: "X"')).toMatchObject({ __typename: 'InvalidInput', field: 'tierId' });
    expect((await readWholeLedger(api.store)).length).toBe(before);
  });

  it('answers an unknown tenant and a malformed DateTime as client errors', async () => {
    const unknown = await api.gql(operator, '{ effectiveLimits(tenantId: "nobody") { source } }');
    expect(unknown.errors?.[0]?.extensions?.code).toBe('UNKNOWN_TENANT');
    expect(unknown.data).toBeNull();
    const badDate = await api.gql(operator, '{ effectiveLimitsAt(tenantId: "acme", at: "yesterday") { source } }');
    expect(badDate.errors?.[0]?.message).toMatch(/ISO 8601/);
  });
});
