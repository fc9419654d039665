// The Sparkplug B door on the machine's Mosquitto: NDATA and DDATA made with sparkplug-payload's encoder are
// charged on SPARKPLUG, one reading per metric with a value, for the tenant the group maps to; births are not
// charged, garbage is dropped, a message larger than the burst is refused as rejected (it can never fit), and
// a payload over the bounds of payloadBounds.ts (issue 34: a template 60 deep) is dropped at once and settled.
import sparkplug from 'sparkplug-payload';
import mqtt, { type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Governor } from '../../../../src/governance/index.ts';
import { createCountingSink, type CountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { startMqttConsumer, type MqttConsumer } from '../../../../src/doors/pipeline/brokerConsumer.ts';
import { createSparkplugHandler } from '../../../../src/doors/sparkplug/sparkplugDoor.ts';
import { sparkplugSubscriptions } from '../../../../src/doors/sparkplug/topics.ts';
import type { DropReason } from '../../../../src/doors/pipeline/index.ts';
import { mosquittoReachable, mqttUrl, uniqueNames } from '../../../support/mosquitto.ts';
import { waitFor } from '../../../support/waitFor.ts';
import { CollectingRecorder, TableLimitSource } from '../http/frontDoorHarness.ts';
import { knowCeilings } from '../mqtt/mqttHarness.ts';

const reachable = await mosquittoReachable('the Sparkplug B door suite');
const codec = sparkplug.get('spBv1.0')!;

describe.skipIf(!reachable)('Sparkplug B door', () => {
  const names = uniqueNames('sp');
  const mappedGroup = `gl-line-${names.suffix}`;
  const ownGroup = `gl-own-${names.suffix}`;
  const recorder = new CollectingRecorder();
  const limits = new TableLimitSource()
    .tenant('plant', { INGEST: { override: { ratePerSecond: 10, burst: 10 } } })
    .tenant(ownGroup, { INGEST: { override: { ratePerSecond: 10, burst: 10 } } });
  const governor = new Governor({ limitSource: limits, recorder });
  const dropped = new Map<DropReason, number>();
  let sink: CountingSink;
  let consumer: MqttConsumer;
  let publisher: MqttClient;

  beforeAll(async () => {
    sink = createCountingSink();
    await knowCeilings(governor, ['plant', ownGroup]);
    consumer = startMqttConsumer({
      url: mqttUrl,
      clientId: `${names.clientId}-sparkplug`,
      subscriptions: sparkplugSubscriptions(names.shareGroup),
      sessionExpirySeconds: 60,
      logger: pino({ level: 'silent' }),
      handle: createSparkplugHandler({
        parts: { governor, sink },
        logger: pino({ level: 'silent' }),
        groupTenants: new Map([[mappedGroup, 'plant']]),
        maxPayloadBytes: 1024 * 1024,
        onDropped: (reason) => dropped.set(reason, (dropped.get(reason) ?? 0) + 1),
      }),
    });
    expect(await consumer.ready(10_000)).toBe(true);
    publisher = await mqtt.connectAsync(mqttUrl, { clientId: `${names.clientId}-edge`, protocolVersion: 5 });
  });

  afterAll(async () => {
    await publisher?.endAsync();
    await consumer?.close();
    await governor.close();
  });

  const payload = (metrics: unknown[]) => Buffer.from(codec.encodePayload({ timestamp: Date.now(), seq: 0, metrics: metrics as never }));

  it('charges each metric with a value as one reading on SPARKPLUG, for the mapped tenant and for a group that is its own', async () => {
    await publisher.publishAsync(
      `spBv1.0/${mappedGroup}/NDATA/edge-1`,
      payload([
        { name: 'temperature', type: 'Double', value: 21.5 },
        { name: 'count', type: 'Int64', value: 12345 },
        { name: 'missing', type: 'Int32', value: null, isNull: true },
      ]),
      { qos: 1 },
    );
    await publisher.publishAsync(
      `spBv1.0/${mappedGroup}/DDATA/edge-1/pump-7`,
      payload([
        { name: 'rpm', type: 'Int32', value: 1500 },
        { alias: 3, type: 'Boolean', value: true },
        { name: 'state', type: 'String', value: 'running' },
      ]),
      { qos: 1 },
    );
    // Births are not telemetry the door charges.
    await publisher.publishAsync(`spBv1.0/${mappedGroup}/NBIRTH/edge-1`, payload([{ name: 'temperature', type: 'Double', value: 1 }]), { qos: 1 });
    await publisher.publishAsync(`spBv1.0/${ownGroup}/NDATA/edge-9`, payload([{ name: 'level', type: 'Float', value: 0.5 }]), { qos: 1 });

    await waitFor(() => sink.unitsByTenant.get('plant') === 5 && sink.unitsByTenant.get(ownGroup) === 1, {
      description: 'five readings for plant and one for the unmapped group',
    });
    await governor.flush();
    expect(recorder.sum('plant', 'SPARKPLUG', 'admittedUnits')).toBe(5);
    expect(recorder.sum(ownGroup, 'SPARKPLUG', 'admittedUnits')).toBe(1);
    // No message charge on SPARKPLUG: two messages, two readings charges.
    expect(recorder.sum('plant', 'SPARKPLUG', 'admittedMessages')).toBe(2);
    expect(consumer.stats().received).toBe(3);
  });

  it('drops a payload that is not Sparkplug B and counts a message larger than the burst as rejected', async () => {
    await publisher.publishAsync(`spBv1.0/${mappedGroup}/NDATA/edge-1`, Buffer.from('not protobuf at all \u00ff'), { qos: 1 });
    await waitFor(() => dropped.get('malformed') === 1, { description: 'the garbage counted as malformed' });
    const many = Array.from({ length: 50 }, (_, i) => ({ name: `m${i}`, type: 'Int32', value: i }));
    await publisher.publishAsync(`spBv1.0/${mappedGroup}/DDATA/edge-1/pump-7`, payload(many), { qos: 1 });
    await waitFor(() => consumer.stats().acknowledged === 5, { description: 'the oversized message settled' });
    await governor.flush();
    // 50 readings against a burst of 10: no wait admits it, so it is rejected, not shed (as the HTTP door's 413).
    expect(recorder.sum('plant', 'SPARKPLUG', 'rejectedUnits')).toBe(50);
    expect(recorder.sum('plant', 'SPARKPLUG', 'shedUnits')).toBe(0);
    expect(sink.unitsByTenant.get('plant')).toBe(5);
  });

  it('refuses the 60-deep template of issue 34 at once, acknowledged so never redelivered, and keeps the event loop free; the next message is admitted', async () => {
    let metric: Record<string, unknown> = { name: 'leaf', type: 'Int32', value: 7 };
    for (let level = 0; level < 60; level++) metric = { name: `t${level}`, type: 'Template', value: { templateRef: 'udt', metrics: [metric] } };
    const poison = payload([metric]);
    const acknowledgedBefore = consumer.stats().acknowledged;
    const tooComplexBefore = dropped.get('too-complex') ?? 0;
    const unitsBefore = sink.unitsByTenant.get(ownGroup) ?? 0;
    // A timer every 10 ms stands for /healthz: the longest gap between its turns is how long the loop was held.
    let lastTickAt = performance.now();
    let maxLoopDelayMs = 0;
    const probe = setInterval(() => {
      const tickAt = performance.now();
      maxLoopDelayMs = Math.max(maxLoopDelayMs, tickAt - lastTickAt - 10);
      lastTickAt = tickAt;
    }, 10);
    const publishedAt = performance.now();
    await publisher.publishAsync(`spBv1.0/${ownGroup}/NDATA/edge-9`, poison, { qos: 1 });
    await waitFor(() => (dropped.get('too-complex') ?? 0) === tooComplexBefore + 1, { description: 'the 60-deep payload dropped as too complex' });
    const refusedAfterMs = performance.now() - publishedAt;
    await publisher.publishAsync(`spBv1.0/${ownGroup}/NDATA/edge-9`, payload([{ name: 'level', type: 'Float', value: 0.75 }, { name: 'ok', type: 'Boolean', value: true }]), { qos: 1 });
    await waitFor(() => sink.unitsByTenant.get(ownGroup) === unitsBefore + 2, { description: 'the next message admitted' });
    await waitFor(() => consumer.stats().acknowledged === acknowledgedBefore + 2, { description: 'both messages acknowledged' });
    clearInterval(probe);
    console.log(`${poison.length}-byte 60-deep payload refused ${refusedAfterMs.toFixed(0)} ms after its publish was acknowledged; longest event-loop delay ${maxLoopDelayMs.toFixed(0)} ms`);
    expect(poison.length).toBeLessThan(1_400);
    expect(refusedAfterMs).toBeLessThan(1_000);
    // sparkplug-payload's decoder held the loop for minutes on this payload; what is left is scheduling.
    expect(maxLoopDelayMs).toBeLessThan(500);
    await governor.flush();
    expect(recorder.sum(ownGroup, 'SPARKPLUG', 'admittedUnits')).toBe(3);
  });
});
