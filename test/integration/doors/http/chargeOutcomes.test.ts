// What the HTTP doors count for a request, over real HTTP: a request that could never fit its tenant's burst
// is answered 413 and counted as rejected; readings charged before a failed credential (401) are counted as
// unauthenticated, never as admitted; readings charged and then not taken (a 503 from the sink, a 429 on
// API_REQUESTS) are not counted at all; only a 202 counts as admitted.
//
// The door meters on a clock of the test's own, moved a minute on before each test: the first test spends acme's
// whole burst, and whether the next ones found it refilled must not depend on how fast the machine is.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEdgeLimit } from '../../../../src/doors/pipeline/edgeLimit.ts';
import { STORED, type AcceptedBatch, type ReadingSink, type SinkAnswer } from '../../../../src/doors/pipeline/sink.ts';
import { storageTargets, type TestDb } from '../../../support/databases.ts';
import { readingsBody, startFrontDoor, TableLimitSource, type RunningFrontDoor } from './frontDoorHarness.ts';

/** A sink that takes batches until told to fail, as a NATS JetStream that went away would. */
class SwitchableSink implements ReadingSink {
  failing = false;
  readonly taken: AcceptedBatch[] = [];
  async publish(batch: AcceptedBatch): Promise<SinkAnswer> {
    if (this.failing) throw new Error('the stream does not answer');
    this.taken.push(batch);
    return STORED;
  }
  async close(): Promise<void> {}
}

const target = storageTargets[0]!;
let testDb: TestDb;
let door: RunningFrontDoor;
let key: string;
let integrationKey: string;
let clockMs = Date.UTC(2026, 10, 29, 12, 0, 0);
const sink = new SwitchableSink();

beforeAll(async () => {
  testDb = await target.open();
  const limits = new TableLimitSource()
    .tenant('acme', { INGEST: { override: { ratePerSecond: 1000, burst: 2000 } }, API_REQUESTS: { override: { ratePerSecond: 1000 } } })
    .tenant('tight', { API_REQUESTS: { override: { ratePerSecond: 1 } } });
  door = await startFrontDoor({ db: testDb.db, limits, edgeLimit: createEdgeLimit({ ratePerSecond: 100_000 }), sink, now: () => clockMs });
  for (const tenant of ['acme', 'tight']) door.governor.confirmTenant(tenant);
  key = await door.register({ tenantId: 'acme', kind: 'tenant', subject: null });
  integrationKey = await door.register({ tenantId: 'acme', kind: 'integration', subject: 'ttn' });
  // The Governor learns the tenants' ceilings before the first request is metered.
  for (const tenant of ['acme', 'tight']) door.governor.admit({ tenant, dimension: 'EGRESS', allowance: 'DETECTION', units: 0, at: clockMs });
  await door.governor.loadsSettled();
}, 120_000);

afterAll(async () => {
  await door?.close();
  await testDb?.dispose();
});

const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${door.baseUrl}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

/** One entry with `n` measurement keys: n readings in few bytes (90,000 fit well under the 1 MiB body cap). */
const compactReadings = (n: number) => JSON.stringify({ readings: [{ measurements: Object.fromEntries(Array.from({ length: n }, (_, i) => [`m${i}`, 0])) }] });

async function counted(tenant: string, allowance: string) {
  await door.governor.flush();
  const sum = (field: 'admittedUnits' | 'rejectedUnits' | 'shedUnits' | 'unauthenticatedUnits' | 'unauthenticatedMessages' | 'admittedMessages') =>
    door.recorder.admissions
      .filter((each) => each.tenantId === tenant && each.allowance === allowance)
      .reduce((total, each) => total + (each[field] ?? 0), 0);
  return {
    admitted: sum('admittedUnits'),
    admittedMessages: sum('admittedMessages'),
    rejected: sum('rejectedUnits'),
    shed: sum('shedUnits'),
    unauthenticated: sum('unauthenticatedUnits'),
    unauthenticatedMessages: sum('unauthenticatedMessages'),
  };
}

describe('what a request that is charged is counted as', () => {
  beforeEach(() => {
    clockMs += 60_000;
  });

  it('413, not 429 with Retry-After, for more readings than the burst: the body names the burst and the size; counted as rejected', async () => {
    const before = await counted('acme', 'HTTP');
    const response = await post('/v1/ingest/acme', compactReadings(90_000), { 'x-device-key': key });
    expect(response.status).toBe(413);
    expect(response.headers.get('retry-after')).toBeNull();
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ units: 90_000, burst: 2000 });
    expect(body.error).toMatch(/90000 readings can never be admitted.*burst is 2000/);
    // A request that fits the burst is still admitted: the allowance was not spent by the refusal.
    expect((await post('/v1/ingest/acme', compactReadings(2000), { 'x-device-key': key })).status).toBe(202);
    const after = await counted('acme', 'HTTP');
    expect(after.rejected - before.rejected).toBe(90_000);
    expect(after.admitted - before.admitted).toBe(2000);
  });

  it('413 on the integrations route too, for more uplinks than the burst (counted as rejected, not shed)', async () => {
    const before = await counted('acme', 'INTEGRATIONS');
    const uplinks = JSON.stringify(Array.from({ length: 2001 }, (_, i) => ({ devEUI: `${i}` })));
    const response = await post('/v1/integrations/acme/ttn', uplinks, { 'x-device-key': integrationKey });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ units: 2001, burst: 2000 });
    const after = await counted('acme', 'INTEGRATIONS');
    expect([after.rejected - before.rejected, after.shed - before.shed, after.admitted - before.admitted]).toEqual([2001, 0, 0]);
  });

  it('readings charged before a failed credential are counted as unauthenticated, never as admitted', async () => {
    const before = await counted('acme', 'HTTP');
    for (const headers of [{}, { 'x-device-key': 'not-a-key' }] as Record<string, string>[]) {
      expect((await post('/v1/ingest/acme', readingsBody(7), headers)).status).toBe(401);
    }
    const after = await counted('acme', 'HTTP');
    expect(after.unauthenticated - before.unauthenticated).toBe(14);
    expect(after.unauthenticatedMessages - before.unauthenticatedMessages).toBe(2);
    expect(after.admitted - before.admitted).toBe(0);
  });

  it('readings charged and then answered 503 by a failing sink are not counted; the retry that is taken is', async () => {
    const before = await counted('acme', 'HTTP');
    sink.failing = true;
    try {
      const failed = await post('/v1/ingest/acme', readingsBody(5), { 'x-device-key': key });
      expect(failed.status).toBe(503);
      expect(failed.headers.get('retry-after')).toBe('1');
    } finally {
      sink.failing = false;
    }
    expect((await post('/v1/ingest/acme', readingsBody(5), { 'x-device-key': key })).status).toBe(202);
    const after = await counted('acme', 'HTTP');
    expect(after.admitted - before.admitted).toBe(5);
    expect(after.admittedMessages - before.admittedMessages).toBe(1);
    expect(after.unauthenticated - before.unauthenticated).toBe(0);
  });

  it('readings of a request refused on API_REQUESTS (429) are not counted as admitted', async () => {
    const tightKey = await door.register({ tenantId: 'tight', kind: 'tenant', subject: null });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await post('/v1/ingest/tight', readingsBody(2), { 'x-device-key': tightKey })).status);
    expect(statuses).toEqual([202, 429, 429]);
    expect((await counted('tight', 'HTTP')).admitted).toBe(2);
  });
});
