// MQTT ingest: readings per second from Mosquitto through the governed MQTT door into NATS JetStream, against
// a bare MQTT-to-NATS forwarder on the same broker and NATS in the same run. Both consume a shared
// subscription on a persistent session, QoS 1, one message at a time, acknowledged once JetStream stored it;
// the forwarder publishes the raw payload, the door decodes, charges the message and its readings on LIVE
// (a tenant within its limit) and publishes the batch. A child process floods the broker; each target runs
// several rounds, alternating, and keeps its best (the machine is shared).
// Both sides are scored on what JetStream stored: the stream's sequence is read at the start and the end of the
// measured window, and once the round is over the messages between the two are read back from the stream and
// their readings counted (`oursStored`, `baselineStored`; the ratio is theirs). What a side acknowledged to the
// broker is reported beside it (`oursAcknowledged`): ours acknowledges shed, dropped and refused messages too,
// which are not stored, so counting acknowledgements scored ours on messages it threw away.
// The flood's publisher is a Node process of its own (unpinned; the broker and NATS are the shared servers).
// BENCH_QUICK=1: 2 rounds of 2 s.
// Target: ours >= 0.7 x baseline. Last line: {"bench":"mqtt-ingest","ours":..,"baseline":..,"ratio":..,"unit":"readings/s",...}
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import mqtt from 'mqtt';
import { connect, DeliverPolicy, type NatsConnection } from 'nats';
import { pino } from 'pino';
import { Governor } from '../src/governance/index.ts';
import type { LimitSource, TenantGovernanceRecord } from '../src/governance/index.ts';
import { createNatsSink, subjectFor } from '../src/doors/pipeline/natsSink.ts';
import { startMqttConsumer } from '../src/doors/pipeline/brokerConsumer.ts';
import { createTelemetryHandler } from '../src/doors/mqtt/telemetryDoor.ts';
import { telemetrySubscription } from '../src/doors/mqtt/topics.ts';
import { readingsOf } from '../src/doors/pipeline/readings.ts';

const MQTT_URL = process.env.MQTT_URL ?? 'mqtt://127.0.0.1:1883';
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const READINGS_PER_MESSAGE = 10;
const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 3;
const WARM_MS = 500;
const MEASURE_MS = QUICK ? 2_000 : 3_000;
const FLOOD = fileURLToPath(new URL('./support/mqttFlood.child.ts', import.meta.url));

const suffix = randomBytes(4).toString('hex');
const root = `glbench-${suffix}`;
const stream = `GL_BENCH_MQTT_${suffix}`;
const subjectPrefix = `glbench.${suffix}.ingest`;
const logger = pino({ level: 'silent' });

interface Target {
  name: 'ours' | 'baseline';
  /** Starts consuming; returns how many messages it has settled so far, and a stop. */
  start(): Promise<{ settled(): number; stop(): Promise<void> }>;
  /** The readings of one message as this side stored it in the stream. */
  readingsIn(data: Uint8Array): number;
}

const reachable = await Promise.all([
  mqtt.connectAsync(MQTT_URL, { protocolVersion: 5, connectTimeout: 2000, reconnectPeriod: 0 }).then((c) => c.endAsync().then(() => true), () => false),
  connect({ servers: NATS_URL, timeout: 2000 }).then((c) => c.close().then(() => true), () => false),
]);
if (!reachable.every(Boolean)) {
  console.log(JSON.stringify({ bench: 'mqtt-ingest', error: `needs Mosquitto at ${MQTT_URL} and NATS at ${NATS_URL}` }));
  process.exit(0);
}

const nats: NatsConnection = await connect({ servers: NATS_URL });
const sink = await createNatsSink({ url: NATS_URL, stream, subjectPrefix });
const jetstream = nats.jetstream();
const record: TenantGovernanceRecord = { tenantId: 'bench', tierId: null, levels: { INGEST: { override: { ratePerSecond: 1_000_000, burst: 1_000_000 } } } };
const limitSource: LimitSource = {
  loadTenants: async (ids) => new Map(ids.includes('bench') ? [['bench', record]] : []),
  loadPlatformDefaults: async () => ({}),
};
const governor = new Governor({ limitSource, recorder: { record: async () => {} } });
governor.admit({ tenant: 'bench', dimension: 'API_REQUESTS', units: 0, at: Date.now() });
await governor.loadsSettled();

const ours: Target = {
  name: 'ours',
  async start() {
    const consumer = startMqttConsumer({
      url: MQTT_URL,
      clientId: `${root}-ours`,
      subscriptions: [telemetrySubscription(root, `${root}-ours`)],
      sessionExpirySeconds: 60,
      logger,
      handle: createTelemetryHandler({ parts: { governor, sink }, logger, topicRoot: root, backlogAfterMs: 5_000, maxPayloadBytes: 1024 * 1024 }),
    });
    if (!(await consumer.ready(10_000))) throw new Error('the door did not subscribe');
    return { settled: () => consumer.stats().acknowledged, stop: () => consumer.close() };
  },
  // The sink stores the accepted batch: its decoded reading entries are `items`.
  readingsIn: (data) => countReadings({ readings: (JSON.parse(Buffer.from(data).toString('utf8')) as { items: unknown }).items }),
};

const baseline: Target = {
  name: 'baseline',
  async start() {
    let settled = 0;
    const client = await mqtt.connectAsync(MQTT_URL, {
      clientId: `${root}-bare`,
      protocolVersion: 5,
      clean: false,
      properties: { sessionExpiryInterval: 60 },
    });
    // The bare forwarder: the topic's tenant level to a subject, the raw payload to JetStream, then the PUBACK.
    client.handleMessage = (packet, callback) => {
      const tenant = packet.topic.split('/')[1] ?? '';
      jetstream.publish(subjectFor(subjectPrefix, tenant), packet.payload as Buffer).then(
        () => {
          settled++;
          callback();
        },
        () => callback(),
      );
    };
    await client.subscribeAsync(`$share/${root}-bare/${root}/+/+/telemetry`, { qos: 1 });
    return { settled: () => settled, stop: () => client.endAsync(true) };
  },
  // The forwarder stores the raw payload.
  readingsIn: (data) => countReadings(JSON.parse(Buffer.from(data).toString('utf8'))),
};

/** Readings of a stored message, counted as the door counts a body's (a reading per measurement, location, alert). */
function countReadings(document: unknown): number {
  const decoded = readingsOf(document);
  return decoded.status === 'decoded' ? decoded.readingCount : 0;
}

const jetstreamManager = await nats.jetstreamManager();
const lastSequence = async (): Promise<number> => (await jetstreamManager.streams.info(stream)).state.last_seq;

/** Reads the stream's messages of sequences (after, upTo] back and counts their readings as `target` stored them. */
async function storedReadings(target: Target, after: number, upTo: number): Promise<number> {
  if (upTo <= after) return 0;
  const consumer = await jetstream.consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 });
  let readings = 0;
  const messages = await consumer.consume();
  for await (const message of messages) {
    if (message.seq > upTo) break;
    readings += target.readingsIn(message.data);
    if (message.seq === upTo) break;
  }
  await messages.close();
  return readings;
}

interface RoundResult {
  /** Readings per second stored in the stream during the window. */
  stored: number;
  /** Readings per second of the messages the side acknowledged to the broker during the window. */
  acknowledged: number;
}

async function round(target: Target): Promise<RoundResult> {
  const running = await target.start();
  const flood: ChildProcess = spawn(process.execPath, ['--import', 'tsx', FLOOD], {
    env: {
      ...process.env,
      MQTT_FLOOD: JSON.stringify({ url: MQTT_URL, clientId: `${root}-flood`, topics: [`${root}/bench/pump-1/telemetry`, `${root}/bench/pump-2/telemetry`], readingsPerMessage: READINGS_PER_MESSAGE }),
    },
    stdio: 'inherit',
  });
  // Wait for the flood to reach the consumer, warm up, then count what it settles in the window.
  const started = Date.now();
  while (running.settled() === 0 && Date.now() - started < 20_000) await sleep(50);
  await sleep(WARM_MS);
  const from = running.settled();
  const fromSequence = await lastSequence();
  const fromAt = performance.now();
  await sleep(MEASURE_MS);
  const messages = running.settled() - from;
  const toSequence = await lastSequence();
  const seconds = (performance.now() - fromAt) / 1000;
  flood.kill('SIGTERM');
  await new Promise((resolve) => flood.once('exit', resolve));
  await running.stop();
  // Ends the session so the next round starts with nothing queued.
  const cleaner = await mqtt.connectAsync(MQTT_URL, { clientId: `${root}-${target.name === 'ours' ? 'ours' : 'bare'}`, protocolVersion: 5, clean: true });
  await cleaner.endAsync();
  const stored = await storedReadings(target, fromSequence, toSequence);
  return { stored: stored / seconds, acknowledged: (messages * READINGS_PER_MESSAGE) / seconds };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const samples: Record<string, RoundResult[]> = { ours: [], baseline: [] };
try {
  for (let i = 0; i < ROUNDS; i++) {
    for (const target of i % 2 === 0 ? [ours, baseline] : [baseline, ours]) {
      const rate = await round(target);
      samples[target.name]!.push({ stored: Math.round(rate.stored), acknowledged: Math.round(rate.acknowledged) });
      console.log(`${target.name}: ${Math.round(rate.stored)} readings/s stored (${Math.round(rate.acknowledged)} acknowledged)`);
    }
  }
} finally {
  await governor.close();
  await sink.close();
  await jetstreamManager.streams.delete(stream).catch(() => {});
  await nats.close();
}
const best = (name: string, of: keyof RoundResult) => Math.max(...samples[name]!.map((each) => each[of]));
console.log(`samples: ${JSON.stringify(samples)}`);
console.log(
  JSON.stringify({
    bench: 'mqtt-ingest',
    ours: best('ours', 'stored'),
    baseline: best('baseline', 'stored'),
    ratio: Number((best('ours', 'stored') / best('baseline', 'stored')).toFixed(3)),
    unit: 'readings/s stored in JetStream (read back from the stream)',
    baselineIs: 'a bare minimum: an MQTT-to-JetStream forwarder on the same broker and NATS (raw payload, no decoding or limits)',
    generator: 'an MQTT publisher in a Node process of its own (QoS 1, 64 in flight), unpinned',
    oursStored: best('ours', 'stored'),
    baselineStored: best('baseline', 'stored'),
    oursAcknowledged: best('ours', 'acknowledged'),
    baselineAcknowledged: best('baseline', 'acknowledged'),
    readingsPerMessage: READINGS_PER_MESSAGE,
    rounds: ROUNDS,
    quick: QUICK,
  }),
);
