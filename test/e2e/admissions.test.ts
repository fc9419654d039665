// The admission API in the whole service, driven over HTTP with plain fetch: decisions of every dimension an
// enforcement point asks for come from the service's Governor and reach the ledger (shedTrend, topShedders)
// and /metrics; an item's `at` decides the second it is charged to; a bad item gets its own error.
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/token.ts';
import { INFERENCE_SPEND_STREAM } from '../../src/ledger/catalog/inference.ts';
import { shedTrend } from '../../src/metrics/trends/shedTrend.ts';
import { topShedders } from '../../src/metrics/trends/topShedders.ts';
import type { Dimension } from '../../src/governance/index.ts';
import type { Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { serviceModes, startServiceIn, type RunningService } from '../support/serviceModes.ts';

// One storage mode (PostgreSQL when it is there): the door does not depend on the mode, and the whole-service
// suites already cover each mode.
const mode = serviceModes('e2e_admissions').at(-1)!;
const SECRET = 'admissions-e2e-secret-0123456789abcdef';

describe(`admission API in the service (${mode.name})`, () => {
  let running: RunningService;
  let service: Service;
  let baseUrl: string;
  let serviceToken: string;

  beforeAll(async () => {
    running = await startServiceIn({ ...mode, env: { ...mode.env, GOVERNANCE_JWT_SECRET: SECRET } });
    ({ service, baseUrl } = running);
    serviceToken = await mintToken({ secret: SECRET, role: 'SERVICE', sub: 'detection-engine', ttl: 600 });
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    for (const tenantId of ['acme', 'late']) {
      expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId, tierId: 'standard' })).toMatchObject({ status: 'applied' });
    }
    const small: Array<[Dimension, { ratePerSecond: number; burst?: number }]> = [
      ['EGRESS', { ratePerSecond: 1, burst: 2 }],
      ['AI_INFERENCE', { ratePerSecond: 1, burst: 2 }],
      ['PROVISIONING', { ratePerSecond: 1, burst: 2 }],
      ['API_REQUESTS', { ratePerSecond: 2 }],
    ];
    for (const [dimension, value] of small) {
      const applied = await service.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension, ...value, reason: 'e2e: small ceilings' });
      expect(applied).toMatchObject({ status: 'applied' });
    }
    await service.projections.waitForCaughtUp();
  }, 180_000);

  afterAll(async () => {
    await running?.stop();
  });

  const post = (path: string, body: unknown, token: string | null = serviceToken) =>
    fetch(`${baseUrl}${path}`, {
      method: 'POST',
      body: typeof body === 'string' ? body : JSON.stringify(body),
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });

  it('answers only SERVICE (or OPERATOR) callers, and refuses what is not a batch', async () => {
    expect((await post('/v1/admissions', { items: [] }, null)).status).toBe(401);
    expect((await post('/v1/admissions', { items: [] }, 'not-a-token')).status).toBe(401);
    const viewer = await mintToken({ secret: SECRET, role: 'TENANT_VIEWER', tenant: 'acme', ttl: 600 });
    expect((await post('/v1/admissions', { items: [] }, viewer)).status).toBe(403);
    expect((await post('/v1/admissions', '{"items": [', serviceToken)).status).toBe(400);
    expect((await post('/v1/admissions', { items: [] })).status).toBe(400);
    const tooMany = Array.from({ length: 1001 }, () => ({ tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1 }));
    expect(await (await post('/v1/admissions', { items: tooMany })).json()).toEqual({ error: 'at most 1000 items per batch' });
    expect((await fetch(`${baseUrl}/v1/admissions`)).status).toBe(405);
  });

  it('answers 401 to a token issued in the future or after it expires, on the admission and lease doors (issue 34, item 8)', async () => {
    const key = new TextEncoder().encode(SECRET);
    const now = Math.floor(Date.now() / 1000);
    const sign = (iat: number, exp: number) =>
      new SignJWT({ role: 'SERVICE' }).setProtectedHeader({ alg: 'HS256' }).setSubject('mallory').setIssuedAt(iat).setExpirationTime(exp).sign(key);
    const tenYears = 10 * 365 * 86_400;
    const item = { items: [{ tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1 }] };
    for (const token of [await sign(now + tenYears - 3600, now + tenYears), await sign(now + 3600, now + 60)]) {
      expect((await post('/v1/admissions', item, token)).status).toBe(401);
      expect((await post('/v1/leases', { requests: [] }, token)).status).toBe(401);
    }
  });

  it('decides each item in order; a bad item gets its field and reason and the others are still decided', async () => {
    const response = await post('/v1/admissions', {
      items: [
        { tenantId: 'acme', dimension: 'PROVISIONING', units: 1 },
        { tenantId: 'acme', dimension: 'EGRESS', units: 1 },
        { tenantId: 'bad name!', dimension: 'EGRESS', allowance: 'DETECTION', units: 1 },
        { tenantId: 'acme', dimension: 'AI_INFERENCE', allowance: 'LIVE', units: 1 },
        { tenantId: 'acme', dimension: 'UNDELIVERED_COMMANDS', units: 1 },
        { tenantId: 'acme', dimension: 'API_REQUESTS', units: -1 },
        { tenantId: 'acme', dimension: 'API_REQUESTS', units: 1, at: Date.now() + 3_600_000 },
        { tenantId: 'acme', dimension: 'EGRESS', allowance: 'CONNECTORS', units: 1, charge: 'message' },
        'not an object',
        { tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1 },
      ],
    });
    expect(response.status).toBe(200);
    const { decisions } = (await response.json()) as { decisions: Record<string, unknown>[] };
    expect(decisions).toHaveLength(10);
    expect(decisions[0]).toMatchObject({ admitted: true, behaviour: 'ADMIT', scope: 'tenant' });
    expect(decisions[1]).toEqual({ error: { field: 'allowance', reason: 'EGRESS needs one of DETECTION, CONNECTORS' } });
    expect(decisions.slice(2, 9).map((each) => (each.error as { field: string }).field)).toEqual([
      'tenantId',
      'allowance',
      'dimension',
      'units',
      'at',
      'charge',
      '',
    ]);
    expect(decisions[9]).toMatchObject({ admitted: true, behaviour: 'ADMIT' });
  });

  it('every dimension\'s refusals reach the ledger, shedTrend, topShedders and /metrics; a request that can never fit is said so and counted as rejected', async () => {
    const from = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    const items = [
      { tenantId: 'acme', dimension: 'EGRESS', allowance: 'DETECTION', units: 1 },
      { tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1 },
      { tenantId: 'acme', dimension: 'PROVISIONING', units: 1 },
      { tenantId: 'acme', dimension: 'API_REQUESTS', units: 1, callerKey: 'gateway-1' },
    ];
    // The first batch teaches the Governor acme's ceilings (metered at the platform default meanwhile).
    await post('/v1/admissions', { items });
    await service.governor.loadsSettled();
    const over = items.map((item) => ({ ...item, units: 5 }));
    const { decisions } = (await (await post('/v1/admissions', { items: over })).json()) as { decisions: Record<string, unknown>[] };
    expect(decisions.map((each) => [each.admitted, each.behaviour, each.source])).toEqual([
      [false, 'SHED', 'TENANT_OVERRIDE'],
      [false, 'REJECT', 'TENANT_OVERRIDE'],
      [false, 'REJECT', 'TENANT_OVERRIDE'],
      [false, 'REJECT', 'TENANT_OVERRIDE'],
    ]);
    expect(decisions[1]).toMatchObject({ limit: 1, retryAfterSeconds: expect.any(Number) });
    expect(decisions[3]).toMatchObject({ limit: 2 });
    // 5 units against a burst (a window) of 2 can never fit: the decision says so, and each is counted as
    // rejected, the SHED dimension's too (it was refused for its size, not shed under load).
    expect(decisions.map((each) => [each.neverFits, each.burst])).toEqual([
      [true, 2],
      [true, 2],
      [true, 2],
      [true, 2],
    ]);

    await service.governor.flush();
    await service.projections.waitForCaughtUp();
    const to = new Date(Date.now() + 60_000);
    for (const [dimension, field] of [
      ['EGRESS', 'rejected'],
      ['AI_INFERENCE', 'rejected'],
      ['PROVISIONING', 'rejected'],
      ['API_REQUESTS', 'rejected'],
    ] as const) {
      const trend = await shedTrend(service.db, { tenantId: 'acme', dimension, from, to, bucket: 'MINUTE' });
      expect(trend.reduce((sum, point) => sum + point[field], 0), `${dimension} ${field}`).toBe(5);
      const top = await topShedders(service.db, { dimension, from, to, first: 5 });
      expect(top.find((each) => each.tenantId === 'acme')?.[field], `${dimension} topShedders`).toBe(5);
    }
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    for (const dimension of ['EGRESS', 'AI_INFERENCE', 'PROVISIONING', 'API_REQUESTS']) {
      const family = 'rejected';
      expect(metrics, dimension).toMatch(new RegExp(`governance_${family}_units_total\\{[^}]*dimension="${dimension}"[^}]*tenant="acme"[^}]*\\} 5\\b`));
    }
  });

  it('an EGRESS item with `at` an hour back is charged to that hour', async () => {
    const at = Date.now() - 3_600_000;
    const response = await post('/v1/admissions', {
      items: [{ tenantId: 'late', dimension: 'EGRESS', allowance: 'CONNECTORS', units: 3, at: new Date(at).toISOString() }],
    });
    expect((await response.json()) as unknown).toMatchObject({ decisions: [{ admitted: true }] });
    await service.governor.flush();
    await service.projections.waitForCaughtUp();
    const trend = await shedTrend(service.db, {
      tenantId: 'late',
      dimension: 'EGRESS',
      from: new Date(at - 3_600_000),
      to: new Date(Date.now() + 3_600_000),
      bucket: 'HOUR',
    });
    expect(trend).toHaveLength(1);
    expect(trend[0]).toMatchObject({ start: new Date(Math.floor(at / 3_600_000) * 3_600_000), admitted: 3, shed: 0, rejected: 0, hits: 0 });
  });

  it('inference usage counts provider tokens on the instance counters and per tenant in the ledger', async () => {
    const one = await post('/v1/inference-usage', { tenantId: 'acme', inputTokens: 120, outputTokens: 30 });
    expect(await one.json()).toEqual({ results: [{ recorded: true }] });
    const batch = await post('/v1/inference-usage', {
      items: [
        { tenantId: 'acme', inputTokens: 80, outputTokens: 20 },
        { tenantId: 'acme', inputTokens: -1, outputTokens: 20 },
        { tenantId: 'late', inputTokens: 1, outputTokens: 2 },
      ],
    });
    expect(await batch.json()).toEqual({
      results: [{ recorded: true }, { error: { field: 'inputTokens', reason: 'a whole number from 0 to 100000000' } }, { recorded: true }],
    });
    await service.inferenceSpend.flush();
    const entries = (await service.store.readStream(INFERENCE_SPEND_STREAM)).flatMap(
      (event) => (event.data as { entries: { tenantId: string; inputTokens: number; outputTokens: number }[] }).entries,
    );
    const acme = entries.filter((entry) => entry.tenantId === 'acme');
    expect(acme.reduce((sum, entry) => sum + entry.inputTokens, 0)).toBe(200);
    expect(acme.reduce((sum, entry) => sum + entry.outputTokens, 0)).toBe(50);
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/ai_inference_input_tokens_total 201\b/);
  });
});
