// What a publisher sends cannot stop the MQTT consumer: a 1 MB garbage payload, a topic that is not valid
// UTF-8 and 10,000 distinct device IDs each leave it consuming, with memory that does not grow with devices.
import net from 'node:net';
import v8 from 'node:v8';
import vm from 'node:vm';
import { randomBytes } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCountingSink, type CountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { mosquittoReachable, mqttUrl, uniqueNames } from '../../../support/mosquitto.ts';
import { waitFor } from '../../../support/waitFor.ts';
import { TableLimitSource } from '../http/frontDoorHarness.ts';
import { startDoor, type DoorUnderTest } from './mqttHarness.ts';

const reachable = await mosquittoReachable('the hostile MQTT publisher suite');
const DEVICES = 10_000;

describe.skipIf(!reachable)('MQTT door against hostile publishers', () => {
  const names = uniqueNames('hostile');
  let sink: CountingSink;
  let door: DoorUnderTest;
  let publisher: MqttClient;
  const telemetry = (device: string) => `${names.root}/fleet/${device}/telemetry`;
  const reading = JSON.stringify({ readings: [{ measurements: { temperature: 21.5 } }] });

  beforeAll(async () => {
    sink = createCountingSink();
    const limits = new TableLimitSource().tenant('fleet', { INGEST: { override: { ratePerSecond: 1_000_000, burst: 1_000_000 } } });
    door = await startDoor({ ...names, limits, sink });
    publisher = await mqtt.connectAsync(mqttUrl, { clientId: `${names.clientId}-pub`, protocolVersion: 5 });
  });

  afterAll(async () => {
    await publisher?.endAsync();
    await door?.close();
  });

  /** Publishes one valid reading and waits until the sink has it: the consumer is still consuming. */
  async function stillConsuming(): Promise<void> {
    const before = sink.totals.units;
    await publisher.publishAsync(telemetry('canary'), reading, { qos: 1 });
    await waitFor(() => sink.totals.units === before + 1, { description: 'the canary reading in the sink' });
  }

  it('drops a 1 MB garbage payload as malformed and keeps consuming', async () => {
    await publisher.publishAsync(telemetry('pump-1'), randomBytes(1_000_000), { qos: 1 });
    await waitFor(() => door.dropped.get('malformed') === 1, { description: 'the garbage counted as malformed' });
    await stillConsuming();
  });

  it('survives a topic that is not valid UTF-8', async () => {
    // mqtt.js will not write such a topic: a raw MQTT 3.1.1 CONNECT and PUBLISH over TCP.
    const url = new URL(mqttUrl);
    const socket = net.connect(Number(url.port || 1883), url.hostname);
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => {});
    socket.resume();
    const clientId = Buffer.from(`${names.clientId}-raw`);
    const connectBody = Buffer.concat([
      Buffer.from([0, 4, 0x4d, 0x51, 0x54, 0x54, 4, 0x02, 0, 30]),
      Buffer.from([clientId.length >> 8, clientId.length & 0xff]),
      clientId,
    ]);
    const topic = Buffer.concat([Buffer.from(`${names.root}/`), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('/pump-1/telemetry')]);
    const publishBody = Buffer.concat([Buffer.from([topic.length >> 8, topic.length & 0xff]), topic, Buffer.from(reading)]);
    socket.write(Buffer.concat([Buffer.from([0x10, connectBody.length]), connectBody]));
    socket.write(Buffer.concat([Buffer.from([0x30, publishBody.length]), publishBody]));
    // The broker refuses the packet and closes the connection (or forwards it, and the door drops the topic).
    await closed;
    await stillConsuming();
    expect(door.consumer.stats().handlerFaults).toBe(0);
  });

  it(`keeps memory bounded over ${DEVICES.toLocaleString('en-US')} distinct device IDs`, async () => {
    const heapBefore = heapUsed();
    const unitsBefore = sink.totals.units;
    for (let start = 0; start < DEVICES; start += 500) {
      await Promise.all(
        Array.from({ length: 500 }, (_, i) => publisher.publishAsync(telemetry(`device-${start + i}`), reading, { qos: 1 })),
      );
    }
    await waitFor(() => sink.totals.units === unitsBefore + DEVICES, { timeoutMs: 50_000, description: 'every device’s reading in the sink' });
    door.arrivals.clear();
    const growthMb = (heapUsed() - heapBefore) / 1024 / 1024;
    console.log(`${DEVICES} device IDs: heap growth ${growthMb.toFixed(2)} MB, ${door.governor.stats().tenantStates} tenant state(s)`);
    // The door keeps no state per device: one tenant state, and the heap where it was.
    expect(door.governor.stats().tenantStates).toBe(1);
    expect(growthMb).toBeLessThan(8);
    await stillConsuming();
  });
});

// A full collection before each reading, so the growth is what is retained, not garbage.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

function heapUsed(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}
