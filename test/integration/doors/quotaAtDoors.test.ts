// A period-quota refusal answered at the doors other than HTTP ingest (issue 33, item 1): the admission API
// answers over-limit with quotaExceeded and a retry to the period's reset, Envoy RLS answers OVER_LIMIT in the
// quota's unit (DAY) with the duration to the reset, and the MQTT live, Sparkplug B and LwM2M doors count the
// over-quota readings as rejected (of which quota-rejected) in the ledger's summaries, never shed; LwM2M answers
// them 4.29 with Max-Age to the reset.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import mqtt from 'mqtt';
import { pino } from 'pino';
import sparkplug from 'sparkplug-payload';
import type { Lwm2mDoor } from '../../../src/doors/lwm2m/startLwm2mDoor.ts';
import { startMqttConsumer, type MqttConsumer } from '../../../src/doors/pipeline/brokerConsumer.ts';
import { createSparkplugHandler } from '../../../src/doors/sparkplug/sparkplugDoor.ts';
import { sparkplugSubscriptions } from '../../../src/doors/sparkplug/topics.ts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAdmissionRoutes } from '../../../src/doors/admissions/admissionRoutes.ts';
import { DEFAULT_DESCRIPTOR_MAPPING } from '../../../src/doors/envoy-rls/descriptorMapping.ts';
import { createRateLimitDecider } from '../../../src/doors/envoy-rls/rateLimitService.ts';
import { startRlsServer } from '../../../src/doors/envoy-rls/rlsServer.ts';
import { Governor } from '../../../src/governance/index.ts';
import { createCountingSink, type CountingSink } from '../../../src/doors/pipeline/countingSink.ts';
import { ADMISSIONS_STREAM } from '../../../src/ledger/catalog/admissions.ts';
import { admissionSummaryReader } from '../../../src/ledger/catalog/summaryRefs.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { postgresOnly, storageTargets } from '../../support/databases.ts';
import { useFileLedger } from '../../support/fileLedger.ts';
import { mosquittoReachable, mqttUrl, uniqueNames } from '../../support/mosquitto.ts';
import { RlsClient } from '../../support/rlsClient.ts';
import { waitFor } from '../../support/waitFor.ts';
import { CollectingRecorder, MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';
import { TableLimitSource } from './http/frontDoorHarness.ts';
import { knowCeilings, startDoor, type DoorUnderTest } from './mqtt/mqttHarness.ts';
import { runClient } from './lwm2m/coapClient.ts';
import { registeredKey, startTestLwm2mDoor } from './lwm2m/lwm2mHarness.ts';

const brokerReachable = await mosquittoReachable('the MQTT part of the quota-at-the-doors suite');

const DAY_MS = 86_400_000;
// One database and ledger for the file (PostgreSQL when there is one): the MQTT, Sparkplug B and LwM2M doors'
// suites each keep to a tenant of their own and sum only its summaries.
const ledger = useFileLedger(postgresOnly ?? storageTargets[0]!);
const closers: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A Governor whose tenant `acme` has a daily AI_INFERENCE quota of 5 (UTC) and a rate that never binds. */
async function governorWithQuota(at: number) {
  const recorder = new CollectingRecorder();
  const limitSource = new MemoryLimitSource().tenant('acme', {
    AI_INFERENCE: { override: { ratePerSecond: 1000, burst: 1000, quota: { period: 'DAY', limit: 5, timeZone: 'UTC' } } },
  });
  const governor = new Governor({ limitSource, recorder });
  closers.push(() => governor.close());
  governor.confirmTenant('acme');
  governor.admit({ tenant: 'acme', dimension: 'AI_INFERENCE', units: 0, at });
  await governor.loadsSettled();
  return { governor, recorder };
}

/** Seconds from `at` to the next UTC midnight. */
const toMidnight = (at: number) => (Math.ceil(at / DAY_MS) * DAY_MS - at) / 1000;

/** A daily INGEST quota of 5 readings (UTC) and a rate that never binds. */
const QUOTA_OF_FIVE = { INGEST: { override: { ratePerSecond: 1000, burst: 1000, quota: { period: 'DAY', limit: 5, timeZone: 'UTC' } } } };

type LedgerTotals = { admittedUnits: number; rejectedUnits: number; quotaRejectedUnits: number; shedUnits: number };

/** The ledger's summaries of a tenant on one allowance, summed, once they count `units` readings decided. */
async function ledgerTotals(store: EventStore, tenantId: string, allowance: string, units: number): Promise<LedgerTotals> {
  const totals: LedgerTotals = { admittedUnits: 0, rejectedUnits: 0, quotaRejectedUnits: 0, shedUnits: 0 };
  await waitFor(
    async () => {
      const entries = (await store.readStream(ADMISSIONS_STREAM)).flatMap(admissionSummaryReader()).filter((entry) => entry.tenantId === tenantId && entry.allowance === allowance);
      totals.admittedUnits = entries.reduce((sum, entry) => sum + entry.admittedUnits, 0);
      totals.rejectedUnits = entries.reduce((sum, entry) => sum + entry.rejectedUnits, 0);
      totals.quotaRejectedUnits = entries.reduce((sum, entry) => sum + (entry.quotaRejectedUnits ?? 0), 0);
      totals.shedUnits = entries.reduce((sum, entry) => sum + entry.shedUnits, 0);
      return totals.admittedUnits + totals.rejectedUnits + totals.shedUnits >= units;
    },
    { timeoutMs: 15_000, description: `the ${allowance} readings of ${tenantId} in the ledger` },
  );
  return totals;
}

describe('the admission API', () => {
  it('past a daily quota of 5, answers admitted false with quotaExceeded, period DAY and a retry to midnight', async () => {
    const at = Date.now();
    const { governor, recorder } = await governorWithQuota(at);
    const routes = createAdmissionRoutes({
      governor,
      inferenceSpend: { record: () => ({ status: 'recorded' }) } as never,
      callers: { check: () => ({ status: 'ok', actor: { id: 'detection-engine', role: 'SERVICE' } }) },
    });
    const admissions = routes.find((route) => route.path === '/v1/admissions')!;
    // The handler reads neither the parsed target nor the fault hook.
    const server: Server = createServer((req, res) => void admissions.handle(req, res, undefined as never, undefined as never));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    type Decision = { admitted: boolean; retryAfterSeconds: number; quotaExceeded?: boolean; quotaPeriod?: string; limit: number };
    const response = await fetch(`${baseUrl}/v1/admissions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ items: Array.from({ length: 7 }, () => ({ tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1, at })) }),
    });
    expect(response.status).toBe(200);
    const decisions = ((await response.json()) as { decisions: Decision[] }).decisions;
    expect(decisions.map((decision) => decision.admitted)).toEqual([true, true, true, true, true, false, false]);
    for (const admitted of decisions.slice(0, 5)) expect(admitted.quotaExceeded ?? false).toBe(false);
    for (const refused of decisions.slice(5)) {
      expect(refused).toMatchObject({ quotaExceeded: true, quotaPeriod: 'DAY', limit: 5 });
      // To the period's reset (UTC midnight after `at`), not to the next token of the rate.
      expect(Math.abs(refused.retryAfterSeconds - toMidnight(at))).toBeLessThanOrEqual(1);
    }
    await governor.flush();
    expect(recorder.total('admittedUnits', 'acme')).toBe(5);
    expect(recorder.total('rejectedUnits', 'acme')).toBe(2);
  });
});

describe('Envoy RLS', () => {
  it('past a daily quota of 5, ShouldRateLimit answers OVER_LIMIT in unit DAY with the duration to midnight', async () => {
    const { governor, recorder } = await governorWithQuota(Date.now());
    const server = await startRlsServer({
      decider: createRateLimitDecider(governor, DEFAULT_DESCRIPTOR_MAPPING),
      port: 0,
      host: '127.0.0.1',
      logger: pino({ level: 'silent' }),
    });
    closers.push(() => server.close());
    const client = new RlsClient(`127.0.0.1:${server.port}`);
    closers.push(() => client.close());
    const call = (hits_addend: number) => ({
      domain: 'devicechain',
      descriptors: [{ entries: [{ key: 'tenant', value: 'acme' }, { key: 'dimension', value: 'AI_INFERENCE' }] }],
      hits_addend,
    });

    expect(await client.shouldRateLimit(call(4))).toMatchObject({ overall_code: 'OK' });
    expect(await client.shouldRateLimit(call(1))).toMatchObject({ overall_code: 'OK' });
    const before = Date.now();
    const refused = await client.shouldRateLimit(call(1));
    const after = Date.now();
    expect(refused.overall_code).toBe('OVER_LIMIT');
    const status = refused.statuses![0]!;
    expect(status.code).toBe('OVER_LIMIT');
    expect(status.current_limit).toMatchObject({ requests_per_unit: 5, unit: 'DAY' });
    expect(status.current_limit!.name).toMatch(/^quota-/);
    const seconds = Number(status.duration_until_reset!.seconds);
    expect(seconds).toBeGreaterThanOrEqual(Math.floor(toMidnight(after)));
    expect(seconds).toBeLessThanOrEqual(Math.ceil(toMidnight(before)) + 1);
    const header = (key: string) => refused.response_headers_to_add!.find((each) => each.key.toLowerCase() === key.toLowerCase())?.value;
    expect(header('X-RateLimit-Scope')).toBe('quota');
    expect(Math.abs(Number(header('Retry-After')) - seconds)).toBeLessThanOrEqual(1);
    await governor.flush();
    expect(recorder.total('admittedUnits', 'acme')).toBe(5);
    expect(recorder.total('rejectedUnits', 'acme')).toBe(1);
  });
});

describe.skipIf(!brokerReachable)('the MQTT live door', () => {
  const names = uniqueNames('quota');
  let sink: CountingSink;
  let door: DoorUnderTest;
  let publisher: mqtt.MqttClient;

  beforeAll(async () => {
    sink = createCountingSink();
    const limits = new TableLimitSource().tenant('metered', {
      INGEST: { override: { ratePerSecond: 1000, burst: 1000, quota: { period: 'DAY', limit: 5, timeZone: 'UTC' } } },
    });
    door = await startDoor({ ...names, limits, sink, ledger: createLedgerRecorder(ledger.store) });
    publisher = await mqtt.connectAsync(mqttUrl, { clientId: `${names.clientId}-pub`, protocolVersion: 5, reconnectPeriod: 0 });
  }, 60_000);

  afterAll(async () => {
    await publisher?.endAsync();
    await door?.close();
    await sink?.close();
  });

  it('past a daily quota of 5 readings, the over-quota readings are rejected (for the quota) in the ledger, not shed', async () => {
    // Four messages of two readings: two fit the quota (4 of 5), the other two do not (a message is all or nothing).
    const measurements = { level: 1 };
    for (let i = 0; i < 4; i++) {
      await publisher.publishAsync(`${names.root}/metered/pump-1/telemetry`, JSON.stringify({ readings: [{ measurements }, { measurements }] }), { qos: 1 });
    }
    await waitFor(() => door.consumer.stats().acknowledged === 4, { timeoutMs: 20_000, description: 'every message acknowledged' });
    expect(sink.unitsByTenant.get('metered')).toBe(4);
    await door.governor.flush();
    expect(door.recorder.sum('metered', 'LIVE', 'admittedUnits')).toBe(4);
    expect(door.recorder.sum('metered', 'LIVE', 'rejectedUnits')).toBe(4);
    expect(door.recorder.sum('metered', 'LIVE', 'quotaRejectedUnits')).toBe(4);
    expect(door.recorder.sum('metered', 'LIVE', 'rejectedMessages')).toBe(2);
    expect(door.recorder.sum('metered', 'LIVE', 'shedUnits')).toBe(0);

    const totals = await ledgerTotals(ledger.store, 'metered', 'LIVE', 8);
    expect(totals).toEqual({ admittedUnits: 4, rejectedUnits: 4, quotaRejectedUnits: 4, shedUnits: 0 });
    expect(door.dropped.size).toBe(0);
  });
});

describe.skipIf(!brokerReachable)('the Sparkplug B door', () => {
  const codec = sparkplug.get('spBv1.0')!;
  const group = `gl-quota-${randomBytes(4).toString('hex')}`;
  let sink: CountingSink;
  let governor: Governor;
  let consumer: MqttConsumer;
  let publisher: mqtt.MqttClient;

  beforeAll(async () => {
    sink = createCountingSink();
    const limits = new TableLimitSource().tenant('plant', QUOTA_OF_FIVE);
    governor = new Governor({ limitSource: limits, recorder: createLedgerRecorder(ledger.store) });
    await knowCeilings(governor, ['plant']);
    consumer = startMqttConsumer({
      url: mqttUrl,
      clientId: `gl-quota-sparkplug-${randomBytes(4).toString('hex')}`,
      subscriptions: sparkplugSubscriptions(`gl-quota-${randomBytes(4).toString('hex')}`),
      sessionExpirySeconds: 60,
      logger: pino({ level: 'silent' }),
      handle: createSparkplugHandler({ parts: { governor, sink }, logger: pino({ level: 'silent' }), groupTenants: new Map([[group, 'plant']]), maxPayloadBytes: 1024 * 1024 }),
    });
    expect(await consumer.ready(10_000)).toBe(true);
    publisher = await mqtt.connectAsync(mqttUrl, { clientId: `gl-quota-edge-${randomBytes(4).toString('hex')}`, protocolVersion: 5, reconnectPeriod: 0 });
  }, 60_000);

  afterAll(async () => {
    await publisher?.endAsync();
    await consumer?.close();
    await governor?.close();
    await sink?.close();
  });

  it('past a daily quota of 5 readings, the over-quota metrics are rejected (for the quota) in the ledger, not shed', async () => {
    // Four NDATA messages of two metrics: two fit the quota (4 of 5), the other two do not.
    const payload = () => Buffer.from(codec.encodePayload({ timestamp: Date.now(), seq: 0, metrics: [{ name: 'a', type: 'Double', value: 1.5 }, { name: 'b', type: 'Int32', value: 2 }] as never }));
    for (let i = 0; i < 4; i++) await publisher.publishAsync(`spBv1.0/${group}/NDATA/edge-1`, payload(), { qos: 1 });
    await waitFor(() => consumer.stats().acknowledged === 4, { timeoutMs: 20_000, description: 'every message acknowledged' });
    expect(sink.unitsByTenant.get('plant')).toBe(4);
    await governor.flush();
    const totals = await ledgerTotals(ledger.store, 'plant', 'SPARKPLUG', 8);
    expect(totals).toEqual({ admittedUnits: 4, rejectedUnits: 4, quotaRejectedUnits: 4, shedUnits: 0 });
  });
});

describe('the LwM2M door', () => {
  let sink: CountingSink;
  let governor: Governor;
  let door: Lwm2mDoor;
  let key: string;

  beforeAll(async () => {
    sink = createCountingSink();
    key = await registeredKey(ledger.db, 'utility', 'meter-1');
    governor = new Governor({ limitSource: new TableLimitSource().tenant('utility', QUOTA_OF_FIVE), recorder: createLedgerRecorder(ledger.store) });
    await knowCeilings(governor, ['utility']);
    door = await startTestLwm2mDoor(ledger.db, governor, sink);
  }, 180_000);

  afterAll(async () => {
    await door?.close();
    await governor?.close();
    await sink?.close();
  });

  it('past a daily quota of 5 readings, answers 4.29 with Max-Age to midnight and records them rejected for the quota', async () => {
    const twoReadings = JSON.stringify([{ bn: '/3303/0/', n: '5700', v: 21.5 }, { n: '5701', v: 1 }]);
    const send = { method: 'POST', pathname: '/dp', contentFormat: 'application/senml+json', payload: twoReadings };
    const before = Date.now();
    const answers = await runClient(door.port, [{ method: 'POST', pathname: '/rd', query: `ep=meter-1&lt=60&lwm2m=1.1&k=${key}` }, send, send, send, send]);
    const after = Date.now();
    expect(answers.map((each) => each.code)).toEqual(['2.01', '2.04', '2.04', '4.29', '4.29']);
    for (const refused of answers.slice(3)) {
      expect(refused.maxAge as number).toBeGreaterThanOrEqual(Math.floor(toMidnight(after)));
      expect(refused.maxAge as number).toBeLessThanOrEqual(Math.ceil(toMidnight(before)) + 1);
    }
    expect(sink.unitsByTenant.get('utility')).toBe(4);
    await governor.flush();
    const totals = await ledgerTotals(ledger.store, 'utility', 'LWM2M', 8);
    expect(totals).toEqual({ admittedUnits: 4, rejectedUnits: 4, quotaRejectedUnits: 4, shedUnits: 0 });
  });
});
