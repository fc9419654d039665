// The GraphQL API in the whole service, over real HTTP with a GraphQL client library: startService with no
// secret configured (so it creates one in the data directory), the listener on a free port, and every query
// and mutation of the API contract (docs/governance-model.md).
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { ClientError, GraphQLClient } from 'graphql-request';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/token.ts';
import { JWT_SECRET_FILE } from '../../src/auth/jwtSecret.ts';
import type { Role } from '../../src/control-plane/controlPlaneCommand.ts';
import { describeOnEachServiceMode, startServiceIn, type RunningService } from '../support/serviceModes.ts';


describeOnEachServiceMode('e2e_graphql', 'GraphQL over HTTP in the service ($name)', (mode) => {
  let running: RunningService;
  let endpoint: string;
  let secret: string;
  const client = async (role: Role, tenant?: string) =>
    new GraphQLClient(endpoint, { headers: { authorization: `Bearer ${await mintToken({ secret, role, tenant, sub: `e2e-${role.toLowerCase()}`, ttl: '5m' })}` } });

  beforeAll(async () => {
    running = await startServiceIn(mode);
    endpoint = `${running.baseUrl}/graphql`;
    const secretFile = path.join(running.dataDir, JWT_SECRET_FILE);
    expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
    secret = (await readFile(secretFile, 'utf8')).trim();
  }, 180_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('answers 401 without a valid token, and serves GraphiQL to a browser', async () => {
    const anonymous = new GraphQLClient(endpoint);
    const refused = await anonymous.request('{ tiers { id } }').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ClientError);
    expect((refused as ClientError).response.status).toBe(401);
    const forged = new GraphQLClient(endpoint, { headers: { authorization: `Bearer ${await mintToken({ secret: 'not-the-secret-of-this-install', role: 'OPERATOR', ttl: 60 })}` } });
    expect(((await forged.request('{ tiers { id } }').catch((error: unknown) => error)) as ClientError).response.status).toBe(401);
    const page = await fetch(endpoint, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
  });

  it('runs every mutation and query of the API contract', async () => {
    const operator = await client('OPERATOR');
    const applied = '{ __typename ... on Applied { position } ... on Error { message } }';
    const run = async (mutation: string) => {
      const data = await operator.request<Record<string, { __typename: string; message?: string }>>(`mutation { ${mutation} ${applied} }`);
      const payload = Object.values(data)[0]!;
      expect(payload.__typename, `${mutation}: ${payload.message ?? ''}`).toBe('Applied');
    };
    await run('setPlatformDefault(input: { dimension: EGRESS, ratePerSecond: 250, burst: 500, reason: "e2e" })');
    await run('defineTier(input: { tierId: "standard", name: "Standard" })');
    await run('defineTier(input: { tierId: "premium", name: "Premium" })');
    await run('setTierLimit(input: { tierId: "standard", dimension: UNDELIVERED_COMMANDS, ceiling: 1, reason: "e2e" })');
    await run('setTierLimit(input: { tierId: "premium", dimension: INGEST, ratePerSecond: 4000 })');
    await run('clearTierLimit(input: { tierId: "premium", dimension: INGEST, reason: "e2e" })');
    await run('registerTenant(input: { tenantId: "acme", tierId: "premium" })');
    await run('assignTenantTier(input: { tenantId: "acme", tierId: "standard", reason: "e2e" })');
    await run('setTenantOverride(input: { tenantId: "acme", dimension: AI_INFERENCE, ratePerSecond: 12, reason: "pilot" })');
    await run('setTenantOverride(input: { tenantId: "acme", dimension: PROVISIONING, ratePerSecond: 30, reason: "rollout" })');
    await run('clearTenantOverride(input: { tenantId: "acme", dimension: PROVISIONING, reason: "done" })');
    const changedAt = new Date();
    await running.service.projections.waitForCaughtUp();

    const delivery = await client('SERVICE');
    const enqueue = `mutation($commandId: ID!) { enqueueCommand(input: { tenantId: "acme", commandId: $commandId, deviceId: "pump-1", payload: { on: true } }) {
      __typename ... on CommandAccepted { undelivered ceiling } ... on CommandRejected { reason retryable retryAfterSeconds } } }`;
    expect(await delivery.request(enqueue, { commandId: 'c1' })).toEqual({ enqueueCommand: { __typename: 'CommandAccepted', undelivered: 1, ceiling: 1 } });
    expect(await delivery.request(enqueue, { commandId: 'c2' })).toEqual({
      enqueueCommand: { __typename: 'CommandRejected', reason: 'CEILING_REACHED', retryable: true, retryAfterSeconds: expect.any(Number) },
    });
    expect(
      await delivery.request('mutation { markCommandDelivered(input: { tenantId: "acme", commandId: "c1" }) { __typename ... on CommandSettled { undelivered } } }'),
    ).toEqual({ markCommandDelivered: { __typename: 'CommandSettled', undelivered: 0 } });

    const auditor = await client('AUDITOR');
    const limits = await auditor.request<{ effectiveLimits: Array<{ dimension: string; source: string }> }>(
      '{ effectiveLimits(tenantId: "acme") { dimension source tierId value { ratePerSecond burst ceiling } } }',
    );
    expect(Object.fromEntries(limits.effectiveLimits.map((limit) => [limit.dimension, limit.source]))).toEqual({
      INGEST: 'SHIPPED_DEFAULT',
      EGRESS: 'PLATFORM_DEFAULT',
      AI_INFERENCE: 'TENANT_OVERRIDE',
      PROVISIONING: 'SHIPPED_DEFAULT',
      UNDELIVERED_COMMANDS: 'TIER',
      API_REQUESTS: 'SHIPPED_DEFAULT',
    });
    const past = await auditor.request<{ effectiveLimitsAt: Array<{ dimension: string; source: string }> }>(
      'query($at: DateTime!) { effectiveLimitsAt(tenantId: "acme", at: $at) { dimension source } }',
      { at: changedAt.toISOString() },
    );
    expect(past.effectiveLimitsAt.find((limit) => limit.dimension === 'AI_INFERENCE')?.source).toBe('TENANT_OVERRIDE');

    expect(await auditor.request('{ tenant(id: "acme") { id tier { id } overrides { dimension } commandBacklog { undelivered ceiling source } } }')).toEqual({
      tenant: { id: 'acme', tier: { id: 'standard' }, overrides: [{ dimension: 'AI_INFERENCE' }], commandBacklog: { undelivered: 0, ceiling: 1, source: 'TIER' } },
    });
    expect(await auditor.request('{ tenants(first: 10) { edges { node { id } } pageInfo { hasNextPage } } }')).toEqual({
      tenants: { edges: [{ node: { id: 'acme' } }], pageInfo: { hasNextPage: false } },
    });
    expect(await auditor.request('{ tiers { id name } }')).toEqual({ tiers: [{ id: 'premium', name: 'Premium' }, { id: 'standard', name: 'Standard' }] });
    const history = await auditor.request<{ limitHistory: { edges: Array<{ node: { kind: string; actor: string } }> } }>(
      '{ limitHistory(tenantId: "acme", first: 3) { edges { cursor node { kind actor reason dimension } } pageInfo { hasNextPage } } }',
    );
    expect(history.limitHistory.edges.map((edge) => edge.node.kind)).toEqual(['OVERRIDE_CLEARED', 'OVERRIDE_SET', 'OVERRIDE_SET']);
    expect(history.limitHistory.edges[0]!.node.actor).toBe('e2e-operator');
    expect(await auditor.request('{ commandBacklog(tenantId: "acme") { undelivered ceiling } }')).toEqual({ commandBacklog: { undelivered: 0, ceiling: 1 } });

    const range = { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() };
    const trends = await auditor.request<Record<string, unknown[]>>(
      `query($from: DateTime!, $to: DateTime!) {
        shedTrend(tenantId: "acme", dimension: INGEST, from: $from, to: $to, bucket: HOUR) { start shed }
        topShedders(from: $from, to: $to, first: 5) { tenantId shed }
        unresolvedAdmissions(from: $from, to: $to) { dimension cause count } }`,
      range,
    );
    expect(Object.keys(trends).sort()).toEqual(['shedTrend', 'topShedders', 'unresolvedAdmissions']);
    for (const list of Object.values(trends)) expect(Array.isArray(list)).toBe(true);
  });

  it('refuses a tenant role another tenant over HTTP with FORBIDDEN', async () => {
    const viewer = await client('TENANT_VIEWER', 'acme');
    const refused = (await viewer.request('{ effectiveLimits(tenantId: "globex") { source } }').catch((error: unknown) => error)) as ClientError;
    expect(refused.response.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(refused.response.data ?? null).toBeNull();
  });
});
