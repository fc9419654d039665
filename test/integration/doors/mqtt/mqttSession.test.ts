// What a broker door leaves on the broker when it stops (src/doors/pipeline/brokerConsumer.ts), on the machine's
// Mosquitto: a clean stop (the service's SIGTERM: close({ endSession: true })) ends the persistent session, so a
// later connection with the same client id finds none; a close without it (a crash, or MQTT_END_SESSION_ON_STOP=
// off) leaves the session and its queue, and a message published meanwhile is delivered to the next start.
import mqtt from 'mqtt';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMqttConsumer, type InboundMessage } from '../../../../src/doors/pipeline/brokerConsumer.ts';
import { mosquittoReachable, mqttUrl, uniqueNames } from '../../../support/mosquitto.ts';
import { waitFor } from '../../../support/waitFor.ts';

const reachable = await mosquittoReachable('the MQTT session suite');
const logger = pino({ level: 'silent' });

/** Connects as `clientId` without cleaning, says whether the broker still held a session for it, and ends it. */
async function sessionPresent(clientId: string): Promise<boolean> {
  const client = mqtt.connect(mqttUrl, { clientId, protocolVersion: 5, clean: false, reconnectPeriod: 0, properties: { sessionExpiryInterval: 0 } });
  const present = await new Promise<boolean>((resolve, reject) => {
    client.once('connect', (connack) => resolve(connack.sessionPresent));
    client.once('error', reject);
  });
  await client.endAsync();
  return present;
}

describe.skipIf(!reachable)('a broker door consumer on stop', () => {
  const names = uniqueNames('session');
  const topic = `${names.root}/acme/pump-1/telemetry`;
  let publisher: mqtt.MqttClient;

  beforeAll(async () => {
    publisher = await mqtt.connectAsync(mqttUrl, { protocolVersion: 5, reconnectPeriod: 0 });
  });
  afterAll(async () => {
    await publisher?.endAsync();
  });

  const consumer = (clientId: string, received: InboundMessage[] = []) =>
    startMqttConsumer({
      url: mqttUrl,
      clientId,
      subscriptions: [`$share/${names.shareGroup}/${names.root}/+/+/telemetry`],
      sessionExpirySeconds: 86_400,
      logger,
      handle: async (message) => {
        received.push(message);
        return 'settled';
      },
    });

  it('ends its session on a clean stop: nothing of it stays on the broker', async () => {
    const clientId = `${names.clientId}-clean`;
    const door = consumer(clientId);
    expect(await door.ready(10_000)).toBe(true);
    await door.close({ endSession: true });
    expect(await sessionPresent(clientId)).toBe(false);
  });

  it('keeps its session when it is not a clean stop, and the next start receives what was published meanwhile', async () => {
    const probed = consumer(`${names.clientId}-probed`);
    expect(await probed.ready(10_000)).toBe(true);
    await probed.close();
    expect(await sessionPresent(`${names.clientId}-probed`)).toBe(true);

    const clientId = `${names.clientId}-kept`;
    const first = consumer(clientId);
    expect(await first.ready(10_000)).toBe(true);
    await first.close();
    await publisher.publishAsync(topic, JSON.stringify({ readings: [{ measurements: { pressure: 1 } }] }), { qos: 1 });
    const received: InboundMessage[] = [];
    const next = consumer(clientId, received);
    try {
      await waitFor(() => received.length === 1, { timeoutMs: 10_000, description: 'the message queued for the kept session' });
    } finally {
      await next.close({ endSession: true });
    }
    expect(await sessionPresent(clientId)).toBe(false);
  });
});
