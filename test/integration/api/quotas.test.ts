// Quotas through the API: a quota set on an override (alone, its rate falling through), a bad one refused with
// the field at fault, quotas on a tier limit and a platform default reached through the cascade (0: none here), webhooks registered by operators only and listed without their secrets, and usage.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnEachStorage } from '../../support/databases.ts';
import { openApiHarness, type ApiHarness } from './apiHarness.ts';

type Payload = { __typename: string; position?: string; field?: string | null; message?: string };

describeOnEachStorage('GraphQL quotas and webhooks on $name', (target) => {
  let api: ApiHarness;
  let operator: string;
  const PAYLOAD = '{ __typename ... on Applied { position } ... on Error { message } ... on InputError { field } }';

  beforeAll(async () => {
    api = await openApiHarness(target);
    operator = await api.token('OPERATOR');
  }, 180_000);
  afterAll(() => api?.dispose());

  it('sets a quota on an override, refuses a bad one, and reads it back beside the rate that falls through', async () => {
    const mutate = async (input: string) => {
      const response = await api.gql<Record<string, Payload>>(operator, `mutation { setTenantOverride(input: { ${input} }) ${PAYLOAD} }`);
      expect(response.errors).toBeUndefined();
      return response.data!.setTenantOverride!;
    };
    expect((await api.gql(operator, 'mutation { registerTenant(input: { tenantId: "acme" }) { __typename } }')).errors).toBeUndefined();
    expect(await mutate('tenantId: "acme", dimension: INGEST, reason: "plan", quota: { period: DAY, limit: 1000, timeZone: "Mars/Base" }')).toMatchObject({
      __typename: 'InvalidLimit',
      field: 'quota.timeZone',
    });
    expect(await mutate('tenantId: "acme", dimension: UNDELIVERED_COMMANDS, reason: "plan", quota: { period: DAY, limit: 5 }')).toMatchObject({ field: 'quota' });
    expect(await mutate('tenantId: "acme", dimension: INGEST, reason: "plan", quota: { period: MONTH, limit: 1000000, resetDay: 15, timeZone: "Europe/Berlin" }')).toMatchObject({
      __typename: 'Applied',
    });
    await api.projections.waitForCaughtUp();
    const read = await api.gql<{ tenant: { overrides: Array<{ value: Record<string, unknown> }>; effectiveLimits: Array<{ dimension: string; source: string }> } }>(
      operator,
      '{ tenant(id: "acme") { overrides { value { ratePerSecond quota { period limit resetDay timeZone } } } effectiveLimits { dimension source } } }',
    );
    expect(read.errors).toBeUndefined();
    expect(read.data!.tenant.overrides).toEqual([{ value: { ratePerSecond: null, quota: { period: 'MONTH', limit: 1_000_000, resetDay: 15, timeZone: 'Europe/Berlin' } } }]);
    const status = await api.gql<{ quotas: unknown[]; quotaNotices: unknown[] }>(
      operator,
      '{ quotas(tenantId: "acme") { dimension source used quota { period limit } } quotaNotices(tenantId: "acme") { thresholdPercent } }',
    );
    expect(status.errors).toBeUndefined();
    expect(status.data).toEqual({ quotas: [{ dimension: 'INGEST', source: 'TENANT_OVERRIDE', used: 0, quota: { period: 'MONTH', limit: 1_000_000 } }], quotaNotices: [] });
    // The override sets no rate: INGEST's rate still comes from below.
    expect(read.data!.tenant.effectiveLimits.find((limit) => limit.dimension === 'INGEST')!.source).toBe('SHIPPED_DEFAULT');
  });

  it('takes a quota on a tier limit and a platform default: each tenant gets the first level that sets one', async () => {
    const run = async (mutation: string) => {
      const response = await api.gql<Record<string, Payload>>(operator, `mutation { ${mutation} ${PAYLOAD} }`);
      expect(response.errors).toBeUndefined();
      return Object.values(response.data!)[0]!;
    };
    expect(await run('defineTier(input: { tierId: "metered", name: "Metered" })')).toMatchObject({ __typename: 'Applied' });
    expect(await run('registerTenant(input: { tenantId: "tiered", tierId: "metered" })')).toMatchObject({ __typename: 'Applied' });
    expect(await run('registerTenant(input: { tenantId: "plain" })')).toMatchObject({ __typename: 'Applied' });
    expect(await run('setTierLimit(input: { tierId: "metered", dimension: EGRESS, reason: "plan", quota: { period: MONTH, limit: 5000, resetDay: 3 } })')).toMatchObject({
      __typename: 'Applied',
    });
    expect(await run('setPlatformDefault(input: { dimension: EGRESS, reason: "plan", quota: { period: DAY, limit: 200 } })')).toMatchObject({ __typename: 'Applied' });
    // A limit of 0 is no quota at that level: it falls through to the platform default.
    expect(await run('setTenantOverride(input: { tenantId: "plain", dimension: EGRESS, reason: "none of its own", ratePerSecond: 10, quota: { period: DAY, limit: 0 } })')).toMatchObject({
      __typename: 'Applied',
    });
    await api.projections.waitForCaughtUp();
    const quotas = async (tenantId: string) => {
      const response = await api.gql<{ quotas: Array<{ dimension: string; source: string; quota: { period: string; limit: number; resetDay: number } }> }>(
        operator,
        `{ quotas(tenantId: "${tenantId}") { dimension source quota { period limit resetDay } } }`,
      );
      expect(response.errors).toBeUndefined();
      return response.data!.quotas.filter((each) => each.dimension === 'EGRESS');
    };
    expect(await quotas('tiered')).toEqual([{ dimension: 'EGRESS', source: 'TIER', quota: { period: 'MONTH', limit: 5000, resetDay: 3 } }]);
    expect(await quotas('plain')).toEqual([{ dimension: 'EGRESS', source: 'PLATFORM_DEFAULT', quota: { period: 'DAY', limit: 200, resetDay: 1 } }]);
  });

  it('registers webhooks for operators only, lists them without secrets, and answers usage', async () => {
    const register = (token: string, url: string) =>
      api.gql<{ registerWebhook: { __typename: string; webhookId?: string; message?: string; field?: string } }>(
        token,
        'mutation ($url: String!) { registerWebhook(input: { url: $url, secret: "0123456789abcdef-secret", events: [QuotaThresholdCrossed], tenantId: "acme" }) { __typename ... on RegisteredWebhook { webhookId } ... on Error { message } ... on InvalidInput { field } } }',
        { url },
      );
    const admin = await api.token('TENANT_ADMIN', 'acme');
    expect((await register(admin, 'https://hooks.example/acme')).data!.registerWebhook.__typename).toBe('Forbidden');
    const badUrl = (await register(operator, 'javascript:alert(1)')).data!.registerWebhook;
    expect(badUrl).toMatchObject({ __typename: 'InvalidInput', field: 'url' });
    const registered = await register(operator, 'https://hooks.example/acme');
    expect(registered.errors).toBeUndefined();
    const listed = await api.gql<{ webhooks: Array<Record<string, unknown>> }>(operator, '{ webhooks(tenantId: "acme") { webhookId tenantId url events deliveries { status } } }');
    expect(listed.data!.webhooks).toEqual([
      { webhookId: registered.data!.registerWebhook.webhookId, tenantId: 'acme', url: 'https://hooks.example/acme', events: ['QuotaThresholdCrossed'], deliveries: [] },
    ]);
    expect((await api.gql(admin, '{ webhooks { webhookId } }')).errors).toBeDefined();
    const used = await api.gql<{ usage: unknown[] }>(operator, '{ usage(tenantId: "acme", from: "2026-06-01T00:00:00Z", to: "2026-07-01T00:00:00Z", granularity: DAY) { periodStart admittedUnits quotaLeft } }');
    expect(used.errors).toBeUndefined();
    expect(used.data!.usage).toEqual([]);
    const tooLong = await api.gql(operator, '{ usage(tenantId: "acme", from: "2020-01-01T00:00:00Z", to: "2026-07-01T00:00:00Z", granularity: DAY) { periodStart } }');
    expect(tooLong.errors![0]!.message).toMatch(/400 days/);
  });
});
