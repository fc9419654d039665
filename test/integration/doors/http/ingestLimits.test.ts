// Limits at the front door over real HTTP: the edge per-IP limit behind trusted and untrusted proxies, the
// integrations route's 202 drop, the API_REQUESTS policies, the overflow allowance of unconfirmed names.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stableCallerFraction } from '../../../../src/governance/index.ts';
import type { CountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { createEdgeLimit } from '../../../../src/doors/pipeline/edgeLimit.ts';
import { storageTargets, type TestDb } from '../../../support/databases.ts';
import {
  readingsBody,
  startFrontDoor,
  TableLimitSource,
  type FrontDoorOptions,
  type RunningFrontDoor,
} from './frontDoorHarness.ts';

const target = storageTargets[0]!;
let testDb: TestDb;
const doors: RunningFrontDoor[] = [];
let clockMs = Date.UTC(2026, 10, 29, 12, 0, 0);

beforeAll(async () => {
  testDb = await target.open();
});
afterAll(async () => {
  for (const door of doors) await door.close();
  await testDb.dispose();
});

async function open(options: Omit<FrontDoorOptions, 'db' | 'now'>): Promise<RunningFrontDoor> {
  const door = await startFrontDoor({ ...options, db: testDb.db, now: () => clockMs });
  doors.push(door);
  return door;
}

const post = (door: RunningFrontDoor, path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${door.baseUrl}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

async function warm(door: RunningFrontDoor, tenantId: string): Promise<void> {
  door.governor.admit({ tenant: tenantId, dimension: 'EGRESS', allowance: 'DETECTION', units: 0, at: clockMs });
  await door.governor.loadsSettled();
}

describe('edge per-IP limit', () => {
  it('429 scope ip, with the IETF fields and no CORS grant; an untrusted peer cannot dodge it with X-Forwarded-For', async () => {
    const door = await open({ limits: new TableLimitSource(), edgeLimit: createEdgeLimit({ ratePerSecond: 2 }) });
    clockMs += 60_000;
    const statuses = [];
    for (const forwarded of ['1.1.1.1', '2.2.2.2', '3.3.3.3']) {
      statuses.push((await post(door, '/v1/ingest/acme', readingsBody(1), { 'x-forwarded-for': forwarded })).status);
    }
    expect(statuses).toEqual([401, 401, 429]);
    const refused = await post(door, '/v1/ingest/acme', readingsBody(1));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-scope')).toBe('ip');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('2');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('ratelimit-policy')).toBe('"ip";q=2;w=1');
    expect(refused.headers.get('ratelimit')).toMatch(/^"ip";r=0;t=\d+$/);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    expect(refused.headers.get('x-request-id')).toBeTruthy();
  });

  it('behind a trusted proxy each client is keyed by the rightmost untrusted X-Forwarded-For address', async () => {
    const door = await open({ limits: new TableLimitSource(), edgeLimit: createEdgeLimit({ ratePerSecond: 2 }), trustedProxyCidrs: ['127.0.0.0/8', '10.0.0.0/8'] });
    clockMs += 60_000;
    const from = async (forwarded: string) => (await post(door, '/v1/ingest/acme', readingsBody(1), { 'x-forwarded-for': forwarded })).status;
    expect(await from('203.0.113.5')).toBe(401);
    // A forged leftmost entry does not change the key: the proxy appended the real address last.
    expect(await from('198.51.100.77, 203.0.113.5')).toBe(401);
    expect(await from('203.0.113.5, 10.1.2.3')).toBe(429);
    // Other clients behind the same proxy keep their own allowance.
    expect(await from('198.51.100.9')).toBe(401);
    expect(await from('2001:db8::1')).toBe(401);
  });

  it('a proxy outside TRUSTED_PROXY_CIDRS is not believed: every client behind it shares its address', async () => {
    const door = await open({ limits: new TableLimitSource(), edgeLimit: createEdgeLimit({ ratePerSecond: 2 }), trustedProxyCidrs: ['10.0.0.0/8'] });
    clockMs += 60_000;
    const statuses = [];
    for (const forwarded of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      statuses.push((await post(door, '/v1/ingest/acme', readingsBody(1), { 'x-forwarded-for': forwarded })).status);
    }
    expect(statuses).toEqual([401, 401, 429]);
  });
});

describe('integrations route', () => {
  it('an array of N uplinks costs N; over the allowance it answers 202 and drops, counted as shed', async () => {
    const limits = new TableLimitSource().tenant('lora', { INGEST: { override: { ratePerSecond: 10, burst: 10 } } });
    const door = await open({ limits, edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }) });
    const key = await door.register({ tenantId: 'lora', kind: 'integration', subject: 'ttn' });
    clockMs += 60_000;
    await warm(door, 'lora');
    const uplinks = JSON.stringify(Array.from({ length: 6 }, (_, i) => ({ devEUI: `00${i}`, payload: 'AQI=' })));
    const first = await post(door, '/v1/integrations/lora/ttn', uplinks, { 'x-device-key': key });
    expect(first.status).toBe(202);
    expect(await first.json()).toMatchObject({ accepted: 6 });
    expect(first.headers.get('ratelimit-policy')).toBe('"tenant-uplinks";q=10;w=1');
    expect(first.headers.get('ratelimit')).toBe('"tenant-uplinks";r=4;t=1');
    const second = await post(door, '/v1/integrations/lora/ttn', uplinks, { 'x-device-key': key });
    expect(second.status).toBe(202);
    expect(await second.json()).toMatchObject({ accepted: 0, dropped: 6 });
    // Dropped, and told how much room is left.
    expect(second.headers.get('ratelimit')).toBe('"tenant-uplinks";r=4;t=1');
    expect((door.sink as CountingSink).unitsByTenant.get('lora')).toBe(6);
    await door.governor.flush();
    expect(door.recorder.sum('lora', 'INTEGRATIONS', 'admittedUnits')).toBe(6);
    expect(door.recorder.sum('lora', 'INTEGRATIONS', 'shedUnits')).toBe(6);
    expect(door.recorder.sum('lora', 'INTEGRATIONS', 'shedMessages')).toBe(1);
  });

  it('401 for a missing key or another integration\'s key, before anything is charged', async () => {
    const limits = new TableLimitSource().tenant('lora2', {});
    const door = await open({ limits, edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }) });
    const key = await door.register({ tenantId: 'lora2', kind: 'integration', subject: 'ttn' });
    expect((await post(door, '/v1/integrations/lora2/ttn', '[{}]')).status).toBe(401);
    expect((await post(door, '/v1/integrations/lora2/chirpstack', '[{}]', { 'x-device-key': key })).status).toBe(401);
    await door.governor.flush();
    expect(door.recorder.admissions.filter((each) => each.tenantId === 'lora2')).toEqual([]);
  });
});

describe('API_REQUESTS policies per tenant', () => {
  it('EXACT_REJECT: past the per-second request limit, 429 on the tenant-requests policy', async () => {
    const limits = new TableLimitSource().tenant('exact', { API_REQUESTS: { override: { ratePerSecond: 2 } } });
    const door = await open({ limits, edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }) });
    const key = await door.register({ tenantId: 'exact', kind: 'tenant', subject: null });
    clockMs += 60_000;
    await warm(door, 'exact');
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post(door, '/v1/ingest/exact', readingsBody(1), { 'x-device-key': key })).status);
    expect(statuses).toEqual([202, 202, 429]);
    const refused = await post(door, '/v1/ingest/exact', readingsBody(1), { 'x-device-key': key });
    expect(refused.headers.get('ratelimit-policy')).toBe('"tenant-requests";q=2;w=1');
    expect(refused.headers.get('x-ratelimit-scope')).toBe('tenant');
  });

  it("a daily INGEST quota: past it, 429 with X-RateLimit-Scope quota and Retry-After to the period's end", async () => {
    const limits = new TableLimitSource().tenant('quota', {
      INGEST: { override: { quota: { period: 'DAY', limit: 5, timeZone: 'UTC' } } },
    });
    const door = await open({ limits, edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }) });
    const key = await door.register({ tenantId: 'quota', kind: 'tenant', subject: null });
    clockMs += 60_000;
    await warm(door, 'quota');
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post(door, '/v1/ingest/quota', readingsBody(2), { 'x-device-key': key })).status);
    expect(statuses).toEqual([202, 202, 429]);
    // 4 of 5 used: one reading still fits, two more do not.
    expect((await post(door, '/v1/ingest/quota', readingsBody(1), { 'x-device-key': key })).status).toBe(202);
    const refused = await post(door, '/v1/ingest/quota', readingsBody(1), { 'x-device-key': key });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-scope')).toBe('quota');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('5');
    const midnight = Math.ceil(clockMs / 86_400_000) * 86_400_000;
    expect(Number(refused.headers.get('retry-after'))).toBe(Math.ceil((midnight - clockMs) / 1000));
    expect(refused.headers.get('ratelimit-policy')).toBe('"quota-readings";q=5;w=86400');
    expect(await refused.json()).toMatchObject({ scope: 'quota', policy: 'quota-readings' });
  });

  it('STABLE_DOWNSAMPLE: each device is wholly in or wholly out within a window, at most twice the limit', async () => {
    const limits = new TableLimitSource().tenant(
      'sampled',
      { API_REQUESTS: { override: { ratePerSecond: 2 } } },
      { apiOverLimitPolicy: 'STABLE_DOWNSAMPLE' },
    );
    const door = await open({ limits, edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }) });
    // Six devices of which exactly two hash below the keep fraction of window 2 (2 offered-limit / 6 offered).
    const fractionOf = (device: string) => stableCallerFraction(`device:${device}`);
    const candidates = Array.from({ length: 400 }, (_, i) => `meter-${(i * 2654435761) % 99991}`);
    const inside = candidates.filter((device) => fractionOf(device) < 1 / 3).slice(0, 2);
    const outside = candidates.filter((device) => fractionOf(device) >= 1 / 3).slice(0, 4);
    const devices = [...outside, ...inside];
    const keys = new Map<string, string>();
    for (const device of devices) keys.set(device, await door.register({ tenantId: 'sampled', kind: 'device', subject: device }));
    clockMs = Math.ceil(clockMs / 1000) * 1000 + 60_000;
    await warm(door, 'sampled');
    const send = async (device: string) =>
      (await post(door, '/v1/ingest/sampled', readingsBody(1, device), { 'x-device-key': keys.get(device)! })).status;

    // Window 1: nothing was offered before, so everyone is kept, up to the hard cap of 2 x 2.
    const first = [];
    for (const device of devices) first.push(await send(device));
    expect(first).toEqual([202, 202, 202, 202, 429, 429]);

    // Window 2: a device is kept for the whole window exactly when its hash is below 1/3.
    clockMs += 1000;
    for (const device of devices) {
      const expected = inside.includes(device) ? 202 : 429;
      expect([await send(device), await send(device)]).toEqual([expected, expected]);
    }
  });
});

describe('unconfirmed tenant names', () => {
  it('past the fixed set, invented names share the overflow allowance at the platform default, and say so', async () => {
    const limits = new TableLimitSource();
    limits.platformDefaults = { INGEST: { ratePerSecond: 3, burst: 3 } };
    // A fresh Governor and no clock jump: the Governor reads its wall clock on a timer, not per admission.
    const door = await open({ limits, edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }), governor: { maxUnconfirmedNames: 3 } });
    await door.governor.loadsSettled();
    for (const name of ['junk-1', 'junk-2', 'junk-3']) expect((await post(door, `/v1/ingest/${name}`, readingsBody(2))).status).toBe(401);
    expect(door.governor.overflowInUse).toBe(false);
    expect((await post(door, '/v1/ingest/junk-4', readingsBody(2))).status).toBe(401);
    const refused = await post(door, '/v1/ingest/junk-5', readingsBody(2));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit-policy')).toBe('"overflow-readings";q=3;w=1');
    expect(refused.headers.get('x-ratelimit-scope')).toBe('tenant');
    expect(door.governor.stats()).toMatchObject({ unconfirmedNames: 3, overflowInUse: true });
  });
});

describe('sink faults', () => {
  it('503 with Retry-After when the sink cannot take the readings, logged with the request ID', async () => {
    const limits = new TableLimitSource().tenant('sinkless', {});
    const door = await open({
      limits,
      edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }),
      sink: { publish: () => Promise.reject(new Error('stream unavailable')), close: async () => {} },
    });
    const key = await door.register({ tenantId: 'sinkless', kind: 'tenant', subject: null });
    const response = await post(door, '/v1/ingest/sinkless', readingsBody(1), { 'x-device-key': key, 'x-request-id': 'sink-fault-1' });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(door.logLines.some((line) => line.requestId === 'sink-fault-1' && line.level === 50)).toBe(true);
  });
});
