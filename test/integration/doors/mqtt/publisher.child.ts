// A device fleet in a child process: publishes QoS 1 telemetry at a steady rate for a while, then prints
// {"published": messages, "readings": readings} and exits. Settings come as JSON in PUBLISHER.
import mqtt from 'mqtt';

interface PublisherSettings {
  url: string;
  clientId: string;
  /** Topics to publish on, in turn. */
  topics: string[];
  messagesPerSecond: number;
  seconds: number;
  readingsPerMessage: number;
  /** Add the MQTT 5 user property sent-at (Unix ms) to each message. */
  sentAt?: boolean;
}

const settings = JSON.parse(process.env.PUBLISHER ?? '{}') as PublisherSettings;
const client = await mqtt.connectAsync(settings.url, { clientId: settings.clientId, protocolVersion: 5, reconnectPeriod: 0 });
const total = Math.round(settings.messagesPerSecond * settings.seconds);
const started = Date.now();
const acks: Promise<unknown>[] = [];
for (let i = 0; i < total; i++) {
  // Paced against the clock, so a slow moment is caught up rather than stretching the run.
  const due = started + (i * 1000) / settings.messagesPerSecond;
  const wait = due - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  const measurements = Object.fromEntries(Array.from({ length: settings.readingsPerMessage }, (_, m) => [`m${m}`, i]));
  const body = JSON.stringify({ readings: [{ measurements }] });
  const properties = settings.sentAt ? { userProperties: { 'sent-at': String(Date.now()) } } : undefined;
  acks.push(client.publishAsync(settings.topics[i % settings.topics.length]!, body, { qos: 1, properties }));
}
await Promise.all(acks);
await client.endAsync();
console.log(JSON.stringify({ published: total, readings: total * settings.readingsPerMessage }));
