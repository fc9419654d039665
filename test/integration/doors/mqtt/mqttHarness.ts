// The MQTT telemetry door built from real parts, as startMqttDoor builds it, with hooks a test reads: each
// message's arrival time per tenant, the drops by reason, the Governor's summaries. The consumer runs on the
// machine's Mosquitto under names of the test's own.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { connect, JSONCodec, AckPolicy, DeliverPolicy } from 'nats';
import { pino } from 'pino';
import { fanOutRecorder, Governor } from '../../../../src/governance/index.ts';
import type { Recorder } from '../../../../src/governance/index.ts';
import type { AcceptedBatch, ReadingSink } from '../../../../src/doors/pipeline/sink.ts';
import { startMqttConsumer, type InboundMessage, type MqttConsumer } from '../../../../src/doors/pipeline/brokerConsumer.ts';
import { createTelemetryHandler } from '../../../../src/doors/mqtt/telemetryDoor.ts';
import type { DropReason, SendTimeOutOfWindow } from '../../../../src/doors/pipeline/index.ts';
import { telemetrySubscription } from '../../../../src/doors/mqtt/topics.ts';
import { CollectingRecorder, type TableLimitSource } from '../http/frontDoorHarness.ts';
import { mqttUrl } from '../../../support/mosquitto.ts';
import { natsUrl } from '../../../support/nats.ts';

export interface DoorUnderTest {
  governor: Governor;
  recorder: CollectingRecorder;
  consumer: MqttConsumer;
  /** Arrival times (ms) of every message, by the topic's tenant level. */
  arrivals: Map<string, number[]>;
  dropped: Map<DropReason, number>;
  /** Messages whose send time lay outside the window, metered at arrival, by reason. */
  outOfWindow: Map<SendTimeOutOfWindow, number>;
  close(): Promise<void>;
}

export interface DoorOptions {
  root: string;
  shareGroup: string;
  clientId: string;
  limits: TableLimitSource;
  sink: ReadingSink;
  /** Also hand the Governor's summaries here (the ledger recorder). */
  ledger?: Recorder;
  backlogAfterMs?: number;
  governor?: Governor;
  /**
   * The door's clock, read from each message (say, a time the test scripted into it) instead of the wall
   * clock: set just before the door reads its clock for that message, so arrivals are at the test's times
   * however the machine schedules them.
   */
  messageClock?: (message: InboundMessage) => number;
}

export async function startDoor(options: DoorOptions): Promise<DoorUnderTest> {
  const recorder = new CollectingRecorder();
  const governor =
    options.governor ??
    new Governor({ limitSource: options.limits, recorder: options.ledger ? fanOutRecorder(options.ledger, recorder) : recorder });
  await knowCeilings(governor, [...options.limits.records.keys()]);
  const arrivals = new Map<string, number[]>();
  const dropped = new Map<DropReason, number>();
  const outOfWindow = new Map<SendTimeOutOfWindow, number>();
  const logger = pino({ level: 'silent' });
  const { messageClock } = options;
  let messageNowMs = 0;
  const handle = createTelemetryHandler({
    ...(messageClock ? { now: () => messageNowMs } : {}),
    parts: { governor, sink: options.sink },
    logger,
    topicRoot: options.root,
    backlogAfterMs: options.backlogAfterMs ?? 5_000,
    maxPayloadBytes: 1024 * 1024,
    onDropped: (reason) => dropped.set(reason, (dropped.get(reason) ?? 0) + 1),
    onSendTimeOutOfWindow: (reason) => outOfWindow.set(reason, (outOfWindow.get(reason) ?? 0) + 1),
  });
  const consumer = startMqttConsumer({
    url: mqttUrl,
    clientId: options.clientId,
    subscriptions: [telemetrySubscription(options.root, options.shareGroup)],
    sessionExpirySeconds: 120,
    logger,
    handle: (message: InboundMessage, signal) => {
      const tenant = message.topic.split('/')[1] ?? '';
      let times = arrivals.get(tenant);
      if (!times) arrivals.set(tenant, (times = []));
      if (messageClock) messageNowMs = messageClock(message);
      times.push(messageClock ? messageNowMs : Date.now());
      return handle(message, signal);
    },
  });
  if (!(await consumer.ready(10_000))) throw new Error('the MQTT consumer did not subscribe within 10 s');
  return {
    governor,
    recorder,
    consumer,
    arrivals,
    dropped,
    outOfWindow,
    async close() {
      await consumer.close();
      if (!options.governor) await governor.close();
    },
  };
}

const PUBLISHER = fileURLToPath(new URL('./publisher.child.ts', import.meta.url));

/**
 * Has the Governor read the tenants' ceilings before traffic arrives: until it has, it meters a tenant at the
 * platform default (docs/governance-model.md), which a test about the tenant's own limit must not measure.
 */
export async function knowCeilings(governor: Governor, tenants: readonly string[]): Promise<void> {
  for (const tenant of tenants) governor.admit({ tenant, dimension: 'API_REQUESTS', units: 0, at: Date.now() });
  await governor.loadsSettled();
}

export interface PublisherRun {
  clientId: string;
  topics: string[];
  messagesPerSecond: number;
  seconds: number;
  readingsPerMessage: number;
  sentAt?: boolean;
}

/** Runs publisher.child.ts to its end; resolves with what it published. */
export function runPublisher(run: PublisherRun): Promise<{ published: number; readings: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', PUBLISHER], {
      env: { ...process.env, PUBLISHER: JSON.stringify({ url: mqttUrl, ...run }) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`the publisher exited ${code}`));
      resolve(JSON.parse(output.trim().split('\n').at(-1)!) as { published: number; readings: number });
    });
  });
}

/** Every batch in `stream`, read once from the start by an ephemeral consumer. */
export async function batchesIn(stream: string): Promise<AcceptedBatch[]> {
  const connection = await connect({ servers: natsUrl });
  try {
    const manager = await connection.jetstreamManager();
    const count = (await manager.streams.info(stream)).state.messages;
    if (count === 0) return [];
    const info = await manager.consumers.add(stream, { ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All });
    const consumer = await connection.jetstream().consumers.get(stream, info.name);
    const codec = JSONCodec<AcceptedBatch>();
    const batches: AcceptedBatch[] = [];
    const messages = await consumer.fetch({ max_messages: count, expires: 5_000 });
    for await (const message of messages) {
      batches.push(codec.decode(message.data));
      if (batches.length === count) break;
    }
    await manager.consumers.delete(stream, info.name).catch(() => {});
    return batches;
  } finally {
    await connection.close();
  }
}

export function unitsByTenant(batches: readonly AcceptedBatch[]): Map<string, number> {
  const units = new Map<string, number>();
  for (const batch of batches) units.set(batch.tenantId, (units.get(batch.tenantId) ?? 0) + batch.units);
  return units;
}
