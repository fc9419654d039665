// A publisher for bench/mqtt-ingest.ts: publishes QoS 1 telemetry as fast as the broker acknowledges it,
// keeping WINDOW publishes outstanding, on the topics in MQTT_FLOOD (JSON), until it is killed.
import mqtt from 'mqtt';

const { url, clientId, topics, readingsPerMessage } = JSON.parse(process.env.MQTT_FLOOD ?? '{}') as {
  url: string;
  clientId: string;
  topics: string[];
  readingsPerMessage: number;
};
const WINDOW = 64;
const body = JSON.stringify({
  readings: [{ measurements: Object.fromEntries(Array.from({ length: readingsPerMessage }, (_, i) => [`m${i}`, i * 1.5])) }],
});
const client = await mqtt.connectAsync(url, { clientId, protocolVersion: 5, reconnectPeriod: 0 });
let sent = 0;
const next = (): void => {
  const topic = topics[sent++ % topics.length]!;
  client.publish(topic, body, { qos: 1 }, (error) => {
    if (error) process.exit(1);
    next();
  });
};
for (let i = 0; i < WINDOW; i++) next();
process.on('SIGTERM', () => process.exit(0));
