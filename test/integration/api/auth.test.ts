// Authentication (401 before anything runs) and tenant isolation (FORBIDDEN and no data) through yoga.fetch.
import { createHash } from 'node:crypto';
import { SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { mintToken } from '../../../src/auth/token.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { openApiHarness, TEST_SECRET, type ApiHarness } from './apiHarness.ts';
import { readWholeLedger } from '../../support/readLedger.ts';

describeOnEachStorage('GraphQL auth on $name', (target) => {
  let api: ApiHarness;
  let operator: string;

  // Opening a database takes long on a busy machine (hence the hook's timeout); the tests themselves are quick.
  beforeAll(async () => {
    api = await openApiHarness(target);
    operator = await api.token('OPERATOR');
    await api.gql(operator, 'mutation { defineTier(input: { tierId: "gold", name: "Gold" }) { __typename } }');
    for (const tenantId of ['acme', 'globex']) {
      await api.gql(operator, `mutation { registerTenant(input: { tenantId: "${tenantId}", tierId: "gold" }) { __typename } }`);
    }
    await api.projections.waitForCaughtUp();
  }, 180_000);
  afterAll(() => api?.dispose());

  const viewerQuery = '{ viewer { id role tenantId } }';

  async function statusWith(authorization: string | undefined): Promise<number> {
    const response = await api.yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
      body: JSON.stringify({ query: viewerQuery }),
    });
    return response.status;
  }

  it('answers 401 with no token, an expired token, a wrong signature, alg=none or a malformed header', async () => {
    const expired = await mintToken({ secret: TEST_SECRET, role: 'OPERATOR', ttl: -60 });
    const wrongSignature = await mintToken({ secret: 'some-other-secret-nobody-configured', role: 'OPERATOR', ttl: '1h' });
    const algNone = new UnsecuredJWT({ role: 'OPERATOR' }).setSubject('mallory').setExpirationTime('1h').encode();
    const noRole = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('x').setExpirationTime('1h').sign(new TextEncoder().encode(TEST_SECRET));
    expect(await statusWith(undefined)).toBe(401);
    expect(await statusWith(`Bearer ${expired}`)).toBe(401);
    expect(await statusWith(`Bearer ${wrongSignature}`)).toBe(401);
    expect(await statusWith(`Bearer ${algNone}`)).toBe(401);
    expect(await statusWith(`Bearer ${noRole}`)).toBe(401);
    expect(await statusWith(`Basic ${Buffer.from('a:b').toString('base64')}`)).toBe(401);
    const unauthenticated = await api.gql(null, viewerQuery);
    expect(unauthenticated.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(unauthenticated.data).toBeUndefined();
    // The body says when an expired token expired, so the client knows to fetch a new one.
    const stale = await api.gql(expired, viewerQuery);
    expect(stale.status).toBe(401);
    expect(stale.errors?.[0]).toMatchObject({ message: expect.stringMatching(/^the bearer token expired at \d{4}-/), extensions: { code: 'UNAUTHENTICATED' } });
  });

  it('answers 401 to a token issued in the future or after it expires (issue 34, item 8)', async () => {
    const key = new TextEncoder().encode(TEST_SECRET);
    const now = Math.floor(Date.now() / 1000);
    const sign = (iat: number, exp: number) =>
      new SignJWT({ role: 'OPERATOR' }).setProtectedHeader({ alg: 'HS256' }).setSubject('x').setIssuedAt(iat).setExpirationTime(exp).sign(key);
    const tenYears = 10 * 365 * 86_400;
    const future = await api.gql(await sign(now + tenYears - 3600, now + tenYears), viewerQuery);
    expect(future).toMatchObject({ status: 401, errors: [{ message: expect.stringContaining('in the future') }] });
    expect(await statusWith(`Bearer ${await sign(now + 3600, now + 60)}`)).toBe(401);
  });

  it('names the caller from a valid token', async () => {
    const response = await api.gql(await api.token('TENANT_VIEWER', 'acme'), viewerQuery);
    expect(response).toEqual({ status: 200, data: { viewer: { id: 'tenant_viewer-acme', role: 'TENANT_VIEWER', tenantId: 'acme' } } });
  });

  it('serves GraphiQL to a browser without a token', async () => {
    const response = await api.yoga.fetch('http://localhost/graphql', { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('governance-ledger');
  });

  it('serves GraphiQL with a Content-Security-Policy that allows its own inline scripts by hash, no framing, nosniff and no Referer', async () => {
    const response = await api.yoga.fetch('http://localhost/graphql', { headers: { accept: 'text/html' } });
    const page = await response.text();
    const policy = response.headers.get('content-security-policy') ?? '';
    const directives = new Map(policy.split(';').map((each) => each.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]));
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    expect(directives.get('default-src')).toEqual(["'none'"]);
    expect(directives.get('connect-src')).toEqual(["'self'"]);
    // Each inline script of the page, and nothing else, by its SHA-256: an injected script would not run.
    const scripts = [...page.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((match) => `'sha256-${createHash('sha256').update(match[1]!).digest('base64')}'`);
    expect(scripts.length).toBeGreaterThan(0);
    expect(directives.get('script-src')).toEqual(scripts);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    // The GraphQL answers themselves are JSON, not pages: no policy needed, and none given.
    const json = await api.yoga.fetch('http://localhost/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' });
    expect(json.headers.get('content-type')).toContain('application/json');
  });

  it('refuses a tenant role another tenant, in root fields and nested fields, with FORBIDDEN and no data', async () => {
    const viewer = await api.token('TENANT_VIEWER', 'acme');
    const own = await api.gql(viewer, '{ effectiveLimits(tenantId: "acme") { dimension source } }');
    expect(own.errors).toBeUndefined();

    for (const query of [
      '{ effectiveLimits(tenantId: "globex") { dimension source } }',
      '{ commandBacklog(tenantId: "globex") { undelivered ceiling } }',
      '{ shedTrend(tenantId: "globex", dimension: INGEST, from: "2026-01-01T00:00:00Z", to: "2026-01-01T01:00:00Z", bucket: MINUTE) { shed } }',
      '{ effectiveLimitsAt(tenantId: "globex", at: "2030-01-01T00:00:00Z") { source } }',
      '{ limitHistory(tenantId: "globex") { edges { node { kind } } } }',
      '{ limitHistory { edges { node { kind tenantId } } } }',
      '{ tenants(first: 10) { edges { node { id } } } }',
      '{ tiers { id } }',
      '{ topShedders(from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z") { tenantId } }',
      '{ unresolvedAdmissions(from: "2026-01-01T00:00:00Z", to: "2026-01-02T00:00:00Z") { count } }',
    ]) {
      const response = await api.gql(viewer, query);
      expect(response.errors?.map((error) => error.extensions?.code), query).toEqual(['FORBIDDEN']);
      expect(response.data ?? null, query).toBeNull();
    }

    // Alongside its own tenant, the other tenant's subtree is refused and empty, and nothing of it leaks.
    const mixed = await api.gql<{ mine: unknown; theirs: unknown }>(
      viewer,
      `{ mine: tenant(id: "acme") { id commandBacklog { tenantId undelivered } tier { id } }
         theirs: tenant(id: "globex") { id commandBacklog { tenantId undelivered } effectiveLimits { source } } }`,
    );
    expect(mixed.data).toEqual({ mine: { id: 'acme', commandBacklog: { tenantId: 'acme', undelivered: 0 }, tier: { id: 'gold' } }, theirs: null });
    expect(mixed.errors?.map((error) => [error.path, error.extensions?.code])).toEqual([[['theirs'], 'FORBIDDEN']]);
    expect(JSON.stringify(mixed)).not.toContain('"globex"');
  });

  it('lets auditors and enforcement services read any tenant, and not mutate', async () => {
    for (const role of ['AUDITOR', 'SERVICE'] as const) {
      const token = await api.token(role);
      const read = await api.gql(token, '{ effectiveLimits(tenantId: "globex") { dimension } }');
      expect(read.errors, role).toBeUndefined();
    }
    const auditor = await api.token('AUDITOR');
    expect((await api.gql(auditor, '{ tenants(first: 5) { edges { node { id } } } }')).errors).toBeUndefined();
    expect((await api.gql(await api.token('SERVICE'), '{ tiers { id } }')).errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('answers a mutation by TENANT_VIEWER or AUDITOR with Forbidden and appends nothing', async () => {
    const before = await readWholeLedger(api.store);
    const mutations = [
      'mutation { setTenantOverride(input: { tenantId: "acme", dimension: INGEST, ratePerSecond: 5, reason: "try" }) { __typename ... on Error { message } } }',
      'mutation { setPlatformDefault(input: { dimension: INGEST, ratePerSecond: 5 }) { __typename ... on Error { message } } }',
      'mutation { defineTier(input: { tierId: "sneaky", name: "Sneaky" }) { __typename ... on Error { message } } }',
      'mutation { enqueueCommand(input: { tenantId: "acme", commandId: "c1", deviceId: "d1", payload: {} }) { __typename ... on Error { message } } }',
      'mutation { markCommandDelivered(input: { tenantId: "acme", commandId: "c1" }) { __typename ... on Error { message } } }',
    ];
    for (const token of [await api.token('TENANT_VIEWER', 'acme'), await api.token('AUDITOR')]) {
      for (const mutation of mutations) {
        const response = await api.gql<Record<string, { __typename: string }>>(token, mutation);
        expect(Object.values(response.data ?? {})[0]?.__typename, mutation).toBe('Forbidden');
      }
    }
    // A tenant admin may deliver its own tenant's commands, never another tenant's.
    const admin = await api.token('TENANT_ADMIN', 'acme');
    const foreign = await api.gql<{ enqueueCommand: { __typename: string } }>(
      admin,
      'mutation { enqueueCommand(input: { tenantId: "globex", commandId: "c1", deviceId: "d1", payload: {} }) { __typename } }',
    );
    expect(foreign.data?.enqueueCommand.__typename).toBe('Forbidden');
    expect(await readWholeLedger(api.store)).toHaveLength(before.length);
  });
});
