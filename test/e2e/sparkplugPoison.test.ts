// Issue 34, item 2, on the whole service: a 1,331-byte Sparkplug B NDATA with a template nested 60 deep held
// the main thread for 14 minutes (/healthz, GraphQL and gRPC stopped) and, redelivered after every restart,
// kept the service from ever listening again. Here the service consumes from the machine's Mosquitto: the
// poison is dropped as too complex at once and acknowledged, /healthz answers all along, and Sparkplug traffic
// after it is admitted.
import { randomBytes } from 'node:crypto';
import mqtt, { type MqttClient } from 'mqtt';
import sparkplug from 'sparkplug-payload';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mosquittoReachable, mqttUrl } from '../support/mosquitto.ts';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { waitFor } from '../support/waitFor.ts';

const reachable = await mosquittoReachable('the Sparkplug poison e2e suite');
const codec = sparkplug.get('spBv1.0')!;

/** The sum of a counter's series on /metrics whose labels include every one of `labels`. */
function counter(text: string, name: string, labels: string[]): number {
  return text
    .split('\n')
    .filter((line) => line.startsWith(name) && labels.every((label) => line.includes(label)))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

describe.skipIf(!reachable)('Sparkplug poison on the running service', () => {
  const suffix = randomBytes(4).toString('hex');
  const group = `gl-poison-${suffix}`;
  let running: RunningService;
  let publisher: MqttClient;

  beforeAll(async () => {
    running = await startServiceIn({
      name: 'embedded PGlite',
      // A share group and client ID of its own on the shared broker; the gRPC port is any free one.
      env: { MQTT_URL: mqttUrl, MQTT_SHARE_GROUP: `gl-poison-${suffix}`, MQTT_CLIENT_ID: `gl-poison-${suffix}`, GOVERNANCE_GRPC_PORT: '0' },
      prepare: async () => {},
      dispose: async () => {},
    });
    publisher = await mqtt.connectAsync(mqttUrl, { clientId: `gl-poison-edge-${suffix}`, protocolVersion: 5 });
  }, 180_000);

  afterAll(async () => {
    await publisher?.endAsync();
    await running?.stop();
  });

  const metrics = async () => (await fetch(`${running.baseUrl}/metrics`)).text();
  const admittedSparkplug = async () => counter(await metrics(), 'devicechain_ingest_governance_admitted_units_total', ['allowance="SPARKPLUG"']);
  const droppedTooComplex = async () => counter(await metrics(), 'devicechain_ingest_door_dropped_messages_total', ['door="sparkplug"', 'reason="too-complex"']);
  const ndata = (metrics: unknown[]) => Buffer.from(codec.encodePayload({ timestamp: Date.now(), seq: 0, metrics: metrics as never }));

  it('drops the 60-deep template at once, answers /healthz all along, and admits what comes after', async () => {
    // The door's subscription is made once the service runs: publish until a reading is admitted.
    await waitFor(
      async () => {
        await publisher.publishAsync(`spBv1.0/${group}/NDATA/edge-1`, ndata([{ name: 'warm-up', type: 'Int32', value: 1 }]), { qos: 1 });
        return (await admittedSparkplug()) > 0;
      },
      { description: 'the Sparkplug door consuming', timeoutMs: 30_000, intervalMs: 500 },
    );

    let slowestHealthzMs = 0;
    let healthzAnswers = 0;
    let polling = true;
    const poll = (async () => {
      while (polling) {
        const startedAt = performance.now();
        const answer = await fetch(`${running.baseUrl}/healthz`);
        expect(answer.status).toBe(200);
        slowestHealthzMs = Math.max(slowestHealthzMs, performance.now() - startedAt);
        healthzAnswers++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    let metric: Record<string, unknown> = { name: 'leaf', type: 'Int32', value: 7 };
    for (let level = 0; level < 60; level++) metric = { name: `t${level}`, type: 'Template', value: { templateRef: 'udt', metrics: [metric] } };
    const poison = ndata([metric]);
    const droppedBefore = await droppedTooComplex();
    const publishedAt = performance.now();
    await publisher.publishAsync(`spBv1.0/${group}/NDATA/edge-1`, poison, { qos: 1 });
    await waitFor(async () => (await droppedTooComplex()) > droppedBefore, { description: 'the poison dropped as too complex' });
    const droppedAfterMs = performance.now() - publishedAt;

    const admittedBefore = await admittedSparkplug();
    await publisher.publishAsync(`spBv1.0/${group}/NDATA/edge-1`, ndata([{ name: 'a', type: 'Double', value: 1.5 }, { name: 'b', type: 'Boolean', value: true }, { name: 'c', type: 'String', value: 'ok' }]), { qos: 1 });
    await waitFor(async () => (await admittedSparkplug()) >= admittedBefore + 3, { description: 'the readings after the poison admitted' });
    polling = false;
    await poll;

    console.log(
      `${poison.length}-byte poison dropped ${droppedAfterMs.toFixed(0)} ms after its publish; /healthz answered ${healthzAnswers} times, the slowest in ${slowestHealthzMs.toFixed(0)} ms`,
    );
    expect(poison.length).toBeLessThan(1_400);
    expect(droppedAfterMs).toBeLessThan(1_000);
    expect(healthzAnswers).toBeGreaterThan(0);
    expect(slowestHealthzMs).toBeLessThan(1_000);
  }, 120_000);
});
