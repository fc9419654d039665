// GET /openapi.json against the real routes of the whole service: every route of the service's table is
// documented, and every status the document lists for a path and method is produced here by a request to the
// running service (503 of the ingest doors by the same routes over a sink that fails).
import type { Server } from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/token.ts';
import { cachedCredentialLookup } from '../../src/doors/pipeline/credentialCache.ts';
import { findIngestCredential, registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { createEdgeLimit } from '../../src/doors/pipeline/edgeLimit.ts';
import { createIngestRoutes } from '../../src/doors/http/routes.ts';
import { parseTrustedProxies } from '../../src/http-server/trustedProxies.ts';
import { createServer, listen } from '../../src/http-server/server.ts';
import type { Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { serviceModes, startServiceIn, type RunningService } from '../support/serviceModes.ts';

const mode = serviceModes('e2e_openapi').at(-1)!;
const SECRET = 'openapi-e2e-secret-0123456789abcdef';
const METRICS_TOKEN = 'scrape-me';

interface Document {
  openapi: string;
  paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>;
}

describe('OpenAPI document against the routes', () => {
  let running: RunningService;
  let service: Service;
  let baseUrl: string;
  let failingBaseUrl: string;
  let failingServer: Server;
  let key: string;
  let tightKey: string;
  let serviceToken: string;

  beforeAll(async () => {
    // /metrics reads its token from the process environment when the service starts.
    process.env.GOVERNANCE_METRICS_TOKEN = METRICS_TOKEN;
    try {
      running = await startServiceIn({ ...mode, env: { ...mode.env, GOVERNANCE_JWT_SECRET: SECRET, INGEST_MAX_BODY_BYTES: '2000' } });
    } finally {
      delete process.env.GOVERNANCE_METRICS_TOKEN;
    }
    ({ service, baseUrl } = running);
    serviceToken = await mintToken({ secret: SECRET, role: 'SERVICE', ttl: 600 });
    await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' });
    await service.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'standard' });
    await service.controlPlane.registerTenant(OPERATOR, { tenantId: 'tight', tierId: 'standard' });
    await service.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'tight', dimension: 'INGEST', ratePerSecond: 1, burst: 1, reason: 'openapi test' });
    await service.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'tight', dimension: 'API_REQUESTS', ratePerSecond: 1, reason: 'openapi test' });
    await service.projections.waitForCaughtUp();
    const keyOf = async (tenantId: string) => {
      const registered = await registerIngestCredential(service.db, { tenantId, kind: 'tenant', subject: null });
      if (registered.status !== 'registered') throw new Error(registered.message);
      return registered.key;
    };
    key = await keyOf('acme');
    tightKey = await keyOf('tight');
    const logger = pino({ level: 'silent' });
    const routes = createIngestRoutes({
      governor: service.governor,
      edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }),
      trustedProxies: parseTrustedProxies([]),
      findCredential: cachedCredentialLookup((presented) => findIngestCredential(service.db, presented)),
      sink: { publish: () => Promise.reject(new Error('sink down')), close: async () => {} },
      logger,
    });
    failingServer = createServer({ logger, readiness: [] }, routes);
    failingBaseUrl = `http://127.0.0.1:${(await listen(failingServer, 0, '127.0.0.1')).port}`;
  }, 180_000);

  afterAll(async () => {
    failingServer?.closeAllConnections();
    await new Promise<void>((resolve) => (failingServer ? failingServer.close(() => resolve()) : resolve()));
    await running?.stop();
  });

  const call = (path: string, init: RequestInit = {}, base = baseUrl) => fetch(`${base}${path}`, init);
  const postJson = (path: string, body: unknown, headers: Record<string, string> = {}, base = baseUrl) =>
    call(path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } }, base);
  const withKey = { get 'x-device-key'() { return key; } };
  const withTightKey = { get 'x-device-key'() { return tightKey; } };
  const readings = (n: number) => ({ readings: Array.from({ length: n }, (_, i) => ({ measurements: { [`m${i}`]: i } })) });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  // A refusal needs the Governor to have learnt the tenant's ceilings first (it meters at the platform default meanwhile).
  const untilStatus = async (status: number, send: () => Promise<Response>) => {
    for (let attempt = 0; attempt < 50; attempt++) {
      const response = await send();
      if (response.status === status) return response;
      await response.arrayBuffer();
      await service.governor.loadsSettled();
    }
    return send();
  };

  // For each documented "METHOD path status": a request that produces it.
  const recipes: Record<string, () => Promise<Response>> = {
    'get /healthz 200': () => call('/healthz'),
    'get /readyz 200': () => call('/readyz'),
    'get /readyz 503': async () => {
      service.readiness.push(async () => 'held down by the test');
      try {
        return await call('/readyz');
      } finally {
        service.readiness.pop();
      }
    },
    'get /metrics 200': () => call('/metrics', { headers: bearer(METRICS_TOKEN) }),
    'get /metrics 401': () => call('/metrics'),
    'post /graphql 200': async () => postJson('/graphql', { query: '{ __typename }' }, bearer(await mintToken({ secret: SECRET, role: 'OPERATOR', ttl: 600 }))),
    'post /graphql 401': () => postJson('/graphql', { query: '{ __typename }' }),
    'post /v1/ingest/{tenant} 202': () => postJson('/v1/ingest/acme', readings(1), withKey),
    'post /v1/ingest/{tenant} 400': () => postJson('/v1/ingest/acme', '{"readings": [', withKey),
    'post /v1/ingest/{tenant} 401': () => postJson('/v1/ingest/acme', readings(1)),
    'post /v1/ingest/{tenant} 404': () => postJson('/v1/ingest/no%20such%20name', readings(1), withKey),
    'post /v1/ingest/{tenant} 413': () => postJson('/v1/ingest/acme', readings(200), withKey),
    'post /v1/ingest/{tenant} 429': () => untilStatus(429, () => postJson('/v1/ingest/tight', readings(20), withTightKey)),
    'post /v1/ingest/{tenant} 503': () => postJson('/v1/ingest/acme', readings(1), withKey, failingBaseUrl),
    'options /v1/ingest/{tenant} 204': () => call('/v1/ingest/acme', { method: 'OPTIONS' }),
    'post /v1/integrations/{tenant}/{integration} 202': () => postJson('/v1/integrations/acme/ttn', { devEUI: '1' }, withKey),
    'post /v1/integrations/{tenant}/{integration} 400': () => postJson('/v1/integrations/acme/ttn', '[', withKey),
    'post /v1/integrations/{tenant}/{integration} 401': () => postJson('/v1/integrations/acme/ttn', { devEUI: '1' }),
    'post /v1/integrations/{tenant}/{integration} 404': () => postJson('/v1/integrations/acme/no%20such', { devEUI: '1' }, withKey),
    'post /v1/integrations/{tenant}/{integration} 413': () => postJson('/v1/integrations/acme/ttn', 'x'.repeat(3000), withKey),
    'post /v1/integrations/{tenant}/{integration} 429': () => untilStatus(429, () => postJson('/v1/integrations/tight/ttn', { devEUI: '1' }, withTightKey)),
    'post /v1/integrations/{tenant}/{integration} 503': () =>
      postJson('/v1/integrations/acme/ttn', { devEUI: '1' }, withKey, failingBaseUrl),
    'options /v1/integrations/{tenant}/{integration} 204': () => call('/v1/integrations/acme/ttn', { method: 'OPTIONS' }),
    'get /openapi.json 200': () => call('/openapi.json'),
    'get /console/ 200': () => call('/console/'),
    'get /favicon.ico 200': () => call('/favicon.ico'),
  };
  for (const path of ['/v1/admissions', '/v1/inference-usage']) {
    const item = path === '/v1/admissions' ? { tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1 } : { tenantId: 'acme', inputTokens: 1, outputTokens: 1 };
    recipes[`post ${path} 200`] = () => postJson(path, { items: [item] }, bearer(serviceToken));
    recipes[`post ${path} 400`] = () => postJson(path, { items: [] }, bearer(serviceToken));
    recipes[`post ${path} 401`] = () => postJson(path, { items: [item] });
    recipes[`post ${path} 403`] = async () => postJson(path, { items: [item] }, bearer(await mintToken({ secret: SECRET, role: 'AUDITOR', ttl: 600 })));
    recipes[`post ${path} 413`] = () => postJson(path, 'x'.repeat(1024 * 1024 + 1), bearer(serviceToken));
  }

  recipes['post /v1/leases 200'] = () => postJson('/v1/leases', { leases: [{ tenantId: 'acme', dimension: 'API_REQUESTS', want: 5 }], summaries: [] }, bearer(serviceToken));
  recipes['post /v1/leases 400'] = () => postJson('/v1/leases', { leases: 'all of them' }, bearer(serviceToken));
  recipes['post /v1/leases 401'] = () => postJson('/v1/leases', { leases: [] });
  recipes['post /v1/leases 403'] = async () => postJson('/v1/leases', { leases: [] }, bearer(await mintToken({ secret: SECRET, role: 'AUDITOR', ttl: 600 })));
  recipes['post /v1/leases 413'] = () => postJson('/v1/leases', 'x'.repeat(1024 * 1024 + 1), bearer(serviceToken));

  it('is OpenAPI 3.1 and documents every route of the service', async () => {
    const response = await call('/openapi.json');
    expect(response.headers.get('content-type')).toBe('application/json');
    const document = (await response.json()) as Document;
    expect(document.openapi).toBe('3.1.0');
    const table = [{ path: '/healthz' }, { path: '/readyz' }, ...service.routes];
    for (const route of table) {
      const prefix = 'prefix' in route && route.prefix === true;
      const documented = Object.keys(document.paths).some((path) => (prefix ? path.startsWith(route.path) : path === route.path));
      expect(documented, `${route.path} is documented`).toBe(true);
    }
  });

  it('every documented status is produced by the running service', async () => {
    const document = (await (await call('/openapi.json')).json()) as Document;
    const documented: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (method === 'parameters') continue;
        for (const status of Object.keys(operation.responses ?? {})) documented.push(`${method} ${path} ${status}`);
      }
    }
    expect(documented.filter((each) => !(each in recipes)), 'documented statuses without a request').toEqual([]);
    expect(Object.keys(recipes).filter((each) => !documented.includes(each)), 'statuses produced but not documented').toEqual([]);
    for (const each of documented) {
      const response = await recipes[each]!();
      await response.arrayBuffer();
      expect(response.status, each).toBe(Number(each.split(' ')[2]));
    }
  }, 60_000);
});
