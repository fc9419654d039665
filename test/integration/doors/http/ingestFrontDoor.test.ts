// The ingest front door over real HTTP: every status code and header of the contract, in the order of docs/governance-model.md.
import { connect } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { createEdgeLimit } from '../../../../src/doors/pipeline/edgeLimit.ts';
import { storageTargets, type TestDb } from '../../../support/databases.ts';
import {
  readingsBody,
  startFrontDoor,
  TableLimitSource,
  type RunningFrontDoor,
} from './frontDoorHarness.ts';

const target = storageTargets[0]!;

describe('HTTP ingest front door', () => {
  let testDb: TestDb;
  let door: RunningFrontDoor;
  let limits: TableLimitSource;
  let clockMs: number;
  let deviceKey: string;
  let tenantKey: string;
  let otherTenantKey: string;

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${door.baseUrl}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

  /** Lets the Governor learn a tenant's ceilings before the test's first charge. */
  const warm = async (tenantId: string) => {
    door.governor.admit({ tenant: tenantId, dimension: 'EGRESS', allowance: 'DETECTION', units: 0, at: clockMs });
    await door.governor.loadsSettled();
  };

  beforeAll(async () => {
    testDb = await target.open();
    limits = new TableLimitSource()
      .tenant('acme', { INGEST: { override: { ratePerSecond: 20, burst: 20 } } })
      .tenant('tiny', { INGEST: { override: { ratePerSecond: 5, burst: 5 } } })
      .tenant('other', {});
    clockMs = Date.UTC(2026, 10, 29, 12, 0, 0);
    door = await startFrontDoor({ db: testDb.db, limits, edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }), maxBodyBytes: 4096, now: () => clockMs });
    deviceKey = await door.register({ tenantId: 'acme', kind: 'device', subject: 'pump-7' });
    tenantKey = await door.register({ tenantId: 'acme', kind: 'tenant', subject: null });
    otherTenantKey = await door.register({ tenantId: 'other', kind: 'tenant', subject: null });
    await warm('acme');
    await warm('tiny');
  });
  afterAll(async () => {
    await door.close();
    await testDb.dispose();
  });
  beforeEach(() => {
    // A fresh second, with full buckets, for every test.
    clockMs += 60_000;
  });

  it('202: accepts readings, counts them as docs/governance-model.md defines, and hands them to the sink', async () => {
    const sink = door.sink as CountingSink;
    const before = sink.unitsByTenant.get('acme') ?? 0;
    const body = JSON.stringify({
      readings: [
        { deviceId: 'pump-7', measurements: { temperature: 21.5, pressure: 1.2 } },
        { deviceId: 'pump-7', location: { latitude: 52.1, longitude: 4.3 } },
        { alert: { type: 'overheat' } },
      ],
    });
    const response = await post('/v1/ingest/acme', body, { 'x-device-key': deviceKey, 'x-request-id': 'caller-req-1' });
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ accepted: 4, requestId: 'caller-req-1' });
    expect(response.headers.get('x-request-id')).toBe('caller-req-1');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(sink.unitsByTenant.get('acme')).toBe(before + 4);
  });

  it('202 carries RateLimit-Policy and RateLimit for the message and readings charges, as the 429s do', async () => {
    // acme: 20/s, burst 20, full buckets. Each request costs a message and its readings.
    const first = await post('/v1/ingest/acme', readingsBody(4), { 'x-device-key': tenantKey });
    expect(first.status).toBe(202);
    expect(first.headers.get('ratelimit-policy')).toBe('"tenant-messages";q=20;w=1, "tenant-readings";q=20;w=1');
    // r: what is left; t: whole seconds until the bucket is full again.
    expect(first.headers.get('ratelimit')).toBe('"tenant-messages";r=19;t=1, "tenant-readings";r=16;t=1');
    const second = await post('/v1/ingest/acme', readingsBody(12), { 'x-device-key': tenantKey });
    expect(second.status).toBe(202);
    expect(second.headers.get('ratelimit')).toBe('"tenant-messages";r=18;t=1, "tenant-readings";r=4;t=1');
    expect(second.headers.get('access-control-expose-headers')).toContain('RateLimit-Policy');
    // The next one does not fit: the 429 goes on from where the 202 left the client.
    const refused = await post('/v1/ingest/acme', readingsBody(5), { 'x-device-key': tenantKey });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit')).toBe(`"tenant-readings";r=4;t=${refused.headers.get('retry-after')}`);
  });

  it('X-Request-ID: a new one when the caller sends none, and it appears in the logs', async () => {
    const response = await post('/v1/ingest/acme', readingsBody(1), { 'x-device-key': tenantKey });
    expect(response.status).toBe(202);
    const requestId = response.headers.get('x-request-id')!;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(door.logLines.some((line) => line.requestId === requestId && line.status === 202)).toBe(true);
  });

  it.each([
    ['{"readings": [', 'the body is not valid JSON'],
    ['{"values": []}', '"readings" is missing'],
    ['{"readings": {}}', '"readings" must be an array'],
    ['{"readings": [{"measurements": {"t": 1}}, "x"]}', 'readings[1] is not an object'],
    ['{"deviceId": "pump-1", "readings": [{"measurements": {"t": 1}}]}', 'unknown field "deviceId" at the top level: "deviceId" belongs in each reading'],
  ])('400: %s is refused with a message that says what is wrong', async (body, message) => {
    const response = await post('/v1/ingest/acme', body, { 'x-device-key': tenantKey });
    expect(response.status).toBe(400);
    const answer = (await response.json()) as { error: string; requestId: string };
    expect(answer.error).toContain(message);
    expect(answer.requestId).toBe(response.headers.get('x-request-id'));
  });

  it('401 after admission: no key, an unknown key, another tenant\'s key, a device key for another device', async () => {
    for (const [headers, body] of [
      [{}, readingsBody(1)],
      [{ 'x-device-key': 'not-a-key' }, readingsBody(1)],
      [{ 'x-device-key': otherTenantKey }, readingsBody(1)],
      [{ 'x-device-key': deviceKey }, readingsBody(1, 'pump-8')],
    ] as const) {
      const response = await post('/v1/ingest/acme', body, headers);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toContain('DeviceKey');
    }
    // The readings were charged before the credential was checked (docs/governance-model.md).
    await door.governor.flush();
    expect(door.recorder.sum('acme', 'HTTP', 'admittedUnits')).toBeGreaterThanOrEqual(4);
  });

  it('413 for a declared Content-Length over the cap, answered before the body is sent', async () => {
    const answer = await rawExchange(
      door.port,
      `POST /v1/ingest/acme HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{"readings":[`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(answer.toLowerCase()).toContain('x-request-id:');
  });

  it('413 for a chunked body that passes the cap while streaming', async () => {
    const chunk = 'a'.repeat(1000);
    const chunks = Array.from({ length: 6 }, () => `${(1000).toString(16)}\r\n${chunk}\r\n`).join('');
    const answer = await rawExchange(
      door.port,
      `POST /v1/ingest/acme HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain('larger than 4096 bytes');
  });

  it('429 tenant scope on readings, with Retry-After, the limit that decided, the IETF fields and CORS', async () => {
    expect((await post('/v1/ingest/tiny', readingsBody(4))).status).toBe(401);
    const response = await post('/v1/ingest/tiny', readingsBody(4));
    expect(response.status).toBe(429);
    const retryAfter = response.headers.get('retry-after')!;
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(response.headers.get('x-ratelimit-scope')).toBe('tenant');
    expect(response.headers.get('x-ratelimit-limit')).toBe('5');
    expect(response.headers.get('ratelimit-policy')).toBe('"tenant-readings";q=5;w=1');
    expect(response.headers.get('ratelimit')).toBe(`"tenant-readings";r=1;t=${retryAfter}`);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    const exposed = response.headers.get('access-control-expose-headers')!;
    for (const header of ['Retry-After', 'X-RateLimit-Scope', 'X-RateLimit-Limit', 'RateLimit-Policy', 'RateLimit', 'X-Request-ID']) {
      expect(exposed).toContain(header);
    }
  });

  it('429 tenant scope on the per-message charge, before the body is decoded', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await post('/v1/ingest/tiny', 'not even json')).status);
    expect(statuses).toEqual([400, 400, 400, 400, 400, 429, 429]);
    const response = await post('/v1/ingest/tiny', 'not even json');
    expect(response.headers.get('ratelimit-policy')).toBe('"tenant-messages";q=5;w=1');
  });

  it('404 for a path that names no possible tenant, 405 for other methods, 204 for a CORS preflight', async () => {
    expect((await post('/v1/ingest/bad%20name', readingsBody(1))).status).toBe(404);
    expect((await post('/v1/ingest/acme/extra', readingsBody(1))).status).toBe(404);
    const get = await fetch(`${door.baseUrl}/v1/ingest/acme`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, OPTIONS');
    const preflight = await fetch(`${door.baseUrl}/v1/ingest/acme`, { method: 'OPTIONS' });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toContain('X-Device-Key');
  });
});

/** Sends raw bytes and returns everything the server answers until it closes the connection. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', (error) => (answer ? resolve(answer) : reject(error)));
    socket.on('close', () => resolve(answer));
    socket.write(request);
  });
}
