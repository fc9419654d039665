// What the MQTT door counts for each answer of the sink, message by message, on the machine's real NATS
// (a stream of the test's own): the rules of src/doors/pipeline/README.md, "Exactly what is charged once".
// The deliveries are handed to the door's handler as the consumer hands them over (session, packet
// identifier, DUP flag), so each rule is met deterministically; test/e2e/mqtt-redelivery.test.ts shows the
// same through a real broker and a killed service.
import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from 'nats';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Governor } from '../../../../src/governance/index.ts';
import { createTelemetryHandler } from '../../../../src/doors/mqtt/telemetryDoor.ts';
import type { InboundMessage } from '../../../../src/doors/pipeline/brokerConsumer.ts';
import { brokerMessageId } from '../../../../src/doors/pipeline/handOff.ts';
import { createNatsSink, type NatsSink } from '../../../../src/doors/pipeline/natsSink.ts';
import type { SinkRefusal } from '../../../../src/doors/pipeline/sink.ts';
import { CollectingRecorder, TableLimitSource } from '../http/frontDoorHarness.ts';
import { natsReachable, natsUrl } from '../../../support/nats.ts';
import { knowCeilings } from './mqttHarness.ts';

const reachable = await natsReachable('the MQTT redelivery counting suite');

describe.skipIf(!reachable)('MQTT door: what each answer of the sink is counted as', () => {
  const suffix = randomBytes(4).toString('hex');
  const stream = `GL_TEST_REDELIVERY_${suffix}`;
  const recorder = new CollectingRecorder();
  const limits = new TableLimitSource().tenant('acme', { INGEST: { override: { ratePerSecond: 1000, burst: 1000 } } });
  const governor = new Governor({ limitSource: limits, recorder });
  const refusals: SinkRefusal[] = [];
  let sink: NatsSink;
  let reader: NatsConnection;
  let handle: ReturnType<typeof createTelemetryHandler>;
  const signal = new AbortController().signal;

  beforeAll(async () => {
    sink = await createNatsSink({ url: natsUrl, stream, subjectPrefix: `gltest.${suffix}.ingest` });
    reader = await connect({ servers: natsUrl });
    await knowCeilings(governor, ['acme']);
    handle = createTelemetryHandler({
      parts: { governor, sink },
      logger: pino({ level: 'silent' }),
      topicRoot: 'devicechain',
      backlogAfterMs: 5_000,
      maxPayloadBytes: 1024 * 1024,
      onRefused: (reason) => refusals.push(reason),
    });
  });

  afterAll(async () => {
    await governor.close();
    await sink?.close();
    await (await reader.jetstreamManager()).streams.delete(stream).catch(() => {});
    await reader?.close();
  });

  const delivery = (packetId: number, payload: string, redelivered: boolean): InboundMessage => ({
    topic: 'devicechain/acme/pump-1/telemetry',
    payload: Buffer.from(payload),
    qos: 1,
    session: `gl-redelivery-${suffix}`,
    packetId,
    redelivered,
  });
  const counted = async () => {
    await governor.flush();
    return { admitted: recorder.sum('acme', 'LIVE', 'admittedUnits'), rejected: recorder.sum('acme', 'LIVE', 'rejectedUnits') };
  };
  const storedMessages = async () => (await (await reader.jetstreamManager()).streams.info(stream)).state.messages;
  const twoReadings = JSON.stringify({ readings: [{ measurements: { t: 1, p: 2 } }] });

  it('a message redelivered (DUP) after it was stored is stored and counted once', async () => {
    expect(await handle(delivery(7, twoReadings, false), signal)).toBe('settled');
    expect(await counted()).toEqual({ admitted: 2, rejected: 0 });
    // The PUBACK was lost (the service was killed): the broker resends it on the session, same packet identifier.
    expect(await handle(delivery(7, twoReadings, true), signal)).toBe('settled');
    expect(await counted()).toEqual({ admitted: 2, rejected: 0 });
    expect(await storedMessages()).toBe(1);
  });

  it('the same packet identifier with another payload is another message (identifiers are reused once acknowledged)', async () => {
    expect(await handle(delivery(7, JSON.stringify({ readings: [{ measurements: { t: 3 } }] }), false), signal)).toBe('settled');
    expect(await counted()).toEqual({ admitted: 3, rejected: 0 });
    expect(await storedMessages()).toBe(2);
  });

  it('a first delivery the sink already holds was stored by its own earlier attempt: counted once, as admitted', async () => {
    const payload = JSON.stringify({ readings: [{ measurements: { t: 4 } }] });
    // Stored directly under the ID the delivery will get, as an attempt whose acknowledgement was lost would have.
    const message = delivery(9, payload, false);
    expect(await sink.publish({ tenantId: 'acme', route: 'mqtt', credential: { kind: 'device', subject: 'pump-1' }, requestId: brokerMessageId(message), receivedAtMs: Date.now(), units: 1, items: [] })).toEqual({
      status: 'stored',
    });
    expect(await handle(message, signal)).toBe('settled');
    expect(await counted()).toEqual({ admitted: 4, rejected: 0 });
    expect(await storedMessages()).toBe(3);
  });

  it('a message the sink refuses for its content is acknowledged at once and counted rejected, never admitted', async () => {
    // Under the 1 MiB body cap; each 1e20 is written back as 21 digits, over NATS' max_payload.
    const grows = `{"readings":[{"measurements":{"t":[${Array.from({ length: 60_000 }, () => '1e20').join(',')}]}}]}`;
    expect(await handle(delivery(11, grows, false), signal)).toBe('settled');
    expect(refusals).toEqual(['too-large']);
    expect(await counted()).toEqual({ admitted: 4, rejected: 1 });
    expect(await storedMessages()).toBe(3);
  });
});
