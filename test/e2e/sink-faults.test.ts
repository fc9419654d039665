// The reading sink under faults, in the whole service (embedded PGlite) on a NATS and a Mosquitto of the
// suite's own (the machine's shared servers are never stopped):
// - content the sink can never take is a 4xx over HTTP and an acknowledged, skipped message over MQTT, counted
//   rejected in the ledger, never admitted, and it holds up no other tenant's messages;
// - NATS stopped for longer than nats.js's default reconnect budget (10 attempts 2 s apart): meanwhile
//   ingest answers 503 with Retry-After and /readyz 503 naming the sink; after NATS returns, ingest answers 202
//   and /readyz 200 without a restart, and an MQTT message held through the outage is stored and charged once.
import { randomBytes } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import { connect, JSONCodec, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { DEFAULT_INGEST_STREAM, ENVELOPE_RESERVE_BYTES } from '../../src/doors/pipeline/natsSink.ts';
import { MAX_JSON_DEPTH } from '../../src/doors/pipeline/readings.ts';
import type { AcceptedBatch } from '../../src/doors/pipeline/sink.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import type { Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { startPrivateMosquitto, startPrivateNats, type PrivateServer } from '../support/privateServers.ts';
import { admissionEntriesOf } from '../support/readLedger.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { waitFor } from '../support/waitFor.ts';

const [nats, mosquitto] = await Promise.all([startPrivateNats(), startPrivateMosquitto()]);
const missing = Object.entries({ 'nats-server': nats, mosquitto })
  .filter(([, server]) => !server)
  .map(([name]) => name);
if (missing.length > 0) {
  console.warn(`the sink-faults suite is skipped: no private ${missing.join(', ')} could be started`);
  await Promise.all([nats?.dispose(), mosquitto?.dispose()]);
}

/** nats.js gives up after 10 reconnect attempts 2 s apart (with jitter): the outage outlasts that by far. */
const OUTAGE_MS = 30_000;

describe.skipIf(missing.length > 0)('the reading sink under faults (private NATS and Mosquitto)', () => {
  const natsServer = nats as PrivateServer;
  const broker = mosquitto as PrivateServer;
  const suffix = randomBytes(4).toString('hex');
  let running: RunningService;
  let service: Service;
  let key: string;
  let publisher: MqttClient;
  let reader: NatsConnection;

  beforeAll(async () => {
    running = await startServiceIn({
      name: 'embedded PGlite with NATS and MQTT',
      env: { NATS_URL: natsServer.url, MQTT_URL: broker.url, MQTT_CLIENT_ID: `gl-sink-faults-${suffix}` },
      prepare: async () => {},
      dispose: async () => {},
    });
    service = running.service;
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    for (const tenantId of ['acme', 'calm']) {
      expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId, tierId: 'standard' })).toMatchObject({ status: 'applied' });
      expect(
        await service.controlPlane.setTenantOverride(OPERATOR, { tenantId, dimension: 'INGEST', ratePerSecond: 1000, burst: 1000, reason: 'sink faults: no limit hits' }),
      ).toMatchObject({ status: 'applied' });
    }
    await service.projections.waitForCaughtUp();
    const registered = await registerIngestCredential(service.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    key = registered.key;
    // The Governor learns the tenants' ceilings before anything is metered.
    for (const tenant of ['acme', 'calm']) service.governor.admit({ tenant, dimension: 'API_REQUESTS', units: 0, at: Date.now() });
    await service.governor.loadsSettled();
    publisher = await mqtt.connectAsync(broker.url, { protocolVersion: 5, clientId: `gl-sink-faults-pub-${suffix}` });
    // The suite's own reader outlives the outage too (nats.js's default budget would close it).
    reader = await connect({ servers: natsServer.url, maxReconnectAttempts: -1 });
    await waitFor(async () => (await readyz()).status === 200, { timeoutMs: 60_000, description: '/readyz 200 before the faults' });
  }, 180_000);

  afterAll(async () => {
    await publisher?.endAsync();
    await reader?.close();
    await running?.stop();
    await Promise.all([natsServer.dispose(), broker.dispose()]);
  });

  const readyz = async () => {
    const response = await fetch(`${running.baseUrl}/readyz`);
    return { status: response.status, body: (await response.json()) as { reasons?: string[] } };
  };
  const post = (body: string, requestId?: string) =>
    fetch(`${running.baseUrl}/v1/ingest/acme`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-device-key': key, ...(requestId ? { 'x-request-id': requestId } : {}) },
    });
  const stored = async () => {
    const jsm = await reader.jetstreamManager();
    const batches: AcceptedBatch[] = [];
    const { messages } = (await jsm.streams.info(DEFAULT_INGEST_STREAM.stream)).state;
    for (let seq = 1; seq <= messages; seq++) {
      const message = await jsm.streams.getMessage(DEFAULT_INGEST_STREAM.stream, { seq }).catch(() => undefined);
      if (message) batches.push(JSONCodec<AcceptedBatch>().decode(message.data));
    }
    return batches;
  };
  const ledger = async (tenantId: string, allowance: string) => {
    await service.governor.flush();
    const entries = admissionEntriesOf(await service.store.readStream(ADMISSIONS_STREAM))
      .filter((entry) => entry.tenantId === tenantId && entry.dimension === 'INGEST' && entry.allowance === allowance);
    return {
      admitted: entries.reduce((sum, entry) => sum + entry.admittedUnits, 0),
      rejected: entries.reduce((sum, entry) => sum + entry.rejectedUnits, 0),
    };
  };
  /** The MQTT door's consumer series on /metrics (devicechain_<service>_door_broker_<name>{door="mqtt"}). */
  const mqttDoorSeries = async (name: string) => {
    const text = await (await fetch(`${running.baseUrl}/metrics`)).text();
    const line = text.split('\n').find((each) => new RegExp(`^devicechain_\\w+?_door_broker_${name}\\{door="mqtt"\\} `).test(each));
    if (line === undefined) throw new Error(`no door_broker_${name}{door="mqtt"} on /metrics`);
    return Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const reading = (value: unknown) => JSON.stringify({ readings: [{ measurements: { t: value } }] });
  /** Under the body cap, but each `1e20` (5 bytes) is written back as 100000000000000000000 (22): over max_payload. */
  const growsPastMaxPayload = () => `{"readings":[{"measurements":{"t":[${Array.from({ length: 60_000 }, () => '1e20').join(',')}]}}]}`;
  const nested = (depth: number) => `{"readings":[{"measurements":{"t":${'['.repeat(depth)}${']'.repeat(depth)}}}]}`;

  it('HTTP: a body over the sink\'s max payload is 413 before it is read, one that serialises over it 413 counted rejected, one nested 100,000 deep 400', async () => {
    const maxPayload = reader.info!.max_payload;
    const capBytes = maxPayload - ENVELOPE_RESERVE_BYTES;
    const before = (await stored()).length;

    // 1,048,565 bytes: under INGEST_MAX_BODY_BYTES (1 MiB), over NATS' max payload with the envelope.
    const padded = (length: number) => {
      const head = '{"readings":[{"measurements":{"t":1},"pad":"';
      const tail = '"}]}';
      return head + 'x'.repeat(length - head.length - tail.length) + tail;
    };
    const overCap = await post(padded(1_048_565));
    expect(overCap.status).toBe(413);
    expect(((await overCap.json()) as { error: string }).error).toContain(String(capBytes));

    const body = growsPastMaxPayload();
    expect(body.length).toBeLessThan(capBytes);
    const tooLargeForSink = await post(body);
    expect(tooLargeForSink.status).toBe(413);
    expect(((await tooLargeForSink.json()) as { error: string }).error).toMatch(/NATS/);

    const deep = await post(nested(100_000));
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: string }).error).toContain(`more than ${MAX_JSON_DEPTH} deep`);

    // None of them held anything up or reached the stream; the next request is taken at once.
    expect((await post(reading(1))).status).toBe(202);
    expect((await stored()).length).toBe(before + 1);
    // The body the sink refused was charged (1 reading) and is counted rejected; only the good one admitted.
    expect(await ledger('acme', 'HTTP')).toMatchObject({ admitted: 1, rejected: 1 });
  });

  it('MQTT: messages the sink can never take are acknowledged and skipped, counted rejected, and another tenant\'s message is not held behind them', async () => {
    const before = (await stored()).length;
    const topic = (tenant: string) => `devicechain/${tenant}/pump-1/telemetry`;
    await publisher.publishAsync(topic('acme'), growsPastMaxPayload(), { qos: 1 });
    await publisher.publishAsync(topic('acme'), nested(100_000), { qos: 1 });
    await publisher.publishAsync(topic('acme'), Buffer.alloc(1_048_565, 0x20), { qos: 1 });
    const calmSentAt = Date.now();
    await publisher.publishAsync(topic('calm'), reading(2), { qos: 1 });

    await waitFor(async () => (await stored()).some((batch) => batch.tenantId === 'calm'), {
      timeoutMs: 20_000,
      intervalMs: 100,
      description: "calm's message in the stream",
    });
    console.log(`calm's message stored ${Date.now() - calmSentAt} ms after it was published behind three poison messages`);
    const batches = (await stored()).slice(before);
    expect(batches.map((batch) => batch.tenantId)).toEqual(['calm']);
    // Only the message that was charged and then refused by the sink counts, as rejected; the other two were
    // dropped before their readings were charged (door_dropped_messages_total, malformed and too-large).
    expect(await ledger('acme', 'LIVE')).toEqual({ admitted: 0, rejected: 1 });
    expect(await ledger('calm', 'LIVE')).toEqual({ admitted: 1, rejected: 0 });
  });

  it(`NATS stopped for ${OUTAGE_MS / 1000} s: 503 with Retry-After and /readyz 503 naming the sink meanwhile; 202 and ready again after it returns, without a restart`, async () => {
    expect((await post(reading(3))).status).toBe(202);
    expect((await readyz()).status).toBe(200);
    const calmBefore = await ledger('calm', 'LIVE');

    await natsServer.stop();
    const stoppedAt = Date.now();
    await waitFor(async () => (await readyz()).status === 503, { timeoutMs: 10_000, intervalMs: 100, description: '/readyz 503 while NATS is down' });
    const unready = await readyz();
    expect(unready.body.reasons?.join('; ')).toMatch(/reading sink \(NATS JetStream at .*\) is disconnected/);
    // Held through the outage by the MQTT door, stored and charged once after it.
    const acknowledgedBefore = await mqttDoorSeries('messages_acknowledged_total');
    await publisher.publishAsync('devicechain/calm/pump-1/telemetry', reading(4), { qos: 1 });
    // Operators see the door holding it, and for how long, while it stays connected to the broker.
    await waitFor(async () => (await mqttDoorSeries('oldest_in_hand_seconds')) >= 2, { timeoutMs: 20_000, intervalMs: 250, description: 'the held message on /metrics' });
    expect(await mqttDoorSeries('messages_in_hand')).toBe(1);
    expect(await mqttDoorSeries('connected')).toBe(1);
    expect(await mqttDoorSeries('messages_acknowledged_total')).toBe(acknowledgedBefore);

    const statuses = new Map<number, number>();
    while (Date.now() - stoppedAt < OUTAGE_MS) {
      const response = await post(reading(5));
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 503) expect(response.headers.get('retry-after')).toBe('1');
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect([...statuses.keys()]).toEqual([503]);
    expect((await readyz()).status).toBe(503);

    await natsServer.start();
    const returnedAt = Date.now();
    await waitFor(
      async () => {
        const response = await post(reading(6));
        await response.body?.cancel();
        return response.status === 202;
      },
      { timeoutMs: 30_000, intervalMs: 250, description: 'ingest 202 after NATS returned' },
    );
    const acceptedAfterMs = Date.now() - returnedAt;
    await waitFor(async () => (await readyz()).status === 200, { timeoutMs: 30_000, intervalMs: 250, description: '/readyz 200 after NATS returned' });
    console.log(`NATS down ${returnedAt - stoppedAt} ms (${[...statuses].map(([status, n]) => `${n} x ${status}`).join(', ')}); 202 again ${acceptedAfterMs} ms and ready ${Date.now() - returnedAt} ms after it returned`);

    // The test's own reads of the stream may time out while the restarted server's JetStream recovers: such a
    // read counts as "not yet", not as the service's failure.
    const storedSoFar = () => stored().catch(() => [] as AcceptedBatch[]);
    await waitFor(async () => (await storedSoFar()).some((batch) => batch.tenantId === 'calm' && batch.items.some((item) => JSON.stringify(item).includes('"t":4'))), {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: 'the MQTT message held through the outage in the stream',
    });
    expect((await stored()).filter((batch) => batch.tenantId === 'calm').length).toBe(2);
    await waitFor(async () => (await mqttDoorSeries('messages_acknowledged_total')) === acknowledgedBefore + 1, { timeoutMs: 10_000, description: 'the held message acknowledged' });
    expect(await mqttDoorSeries('messages_in_hand')).toBe(0);
    expect(await mqttDoorSeries('oldest_in_hand_seconds')).toBe(0);
    expect(await mqttDoorSeries('messages_received_total')).toBe(await mqttDoorSeries('messages_acknowledged_total'));
    expect(await mqttDoorSeries('connects_total')).toBe(1);
    expect(await mqttDoorSeries('handler_faults_total')).toBe(0);
    expect(await ledger('calm', 'LIVE')).toEqual({ admitted: calmBefore.admitted + 1, rejected: 0 });
  }, OUTAGE_MS + 120_000);
});
