// The machine's Mosquitto (MQTT_URL, default mqtt://127.0.0.1:1883) for suites that need it; a suite skips
// itself, and says so, when no broker answers. Suites share the broker with others running at the same
// time, so each takes a topic root, share group and client IDs of its own (uniqueNames).
import { randomBytes } from 'node:crypto';
import mqtt from 'mqtt';

export const mqttUrl = process.env.MQTT_URL ?? 'mqtt://127.0.0.1:1883';

/** True when the broker accepts an MQTT 5 connection within two seconds; otherwise warns that `suite` is skipped. */
export async function mosquittoReachable(suite: string): Promise<boolean> {
  const reachable = await mqtt
    .connectAsync(mqttUrl, { protocolVersion: 5, connectTimeout: 2000, reconnectPeriod: 0 })
    .then(async (client) => {
      await client.endAsync();
      return true;
    })
    .catch(() => false);
  if (!reachable) console.warn(`Mosquitto is not reachable at ${mqttUrl}: ${suite} is skipped.`);
  return reachable;
}

/** A topic root, share group and client-ID stem no other run uses. */
export function uniqueNames(label: string): { root: string; shareGroup: string; clientId: string; suffix: string } {
  const suffix = randomBytes(4).toString('hex');
  return { root: `gl-${label}-${suffix}`, shareGroup: `gl-${label}-${suffix}`, clientId: `gl-${label}-${suffix}`, suffix };
}
