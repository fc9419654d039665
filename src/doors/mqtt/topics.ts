// The MQTT telemetry topic scheme: `<root>/<tenant>/<device>/telemetry` (root `devicechain` unless
// MQTT_TOPIC_ROOT says otherwise). The platform broker authenticates each device on its own topic, so the
// tenant and device named here are believed (docs/governance-model.md); the door only checks that they could be IDs at all.
import { ID_PATTERN } from '../../governance/index.ts';

export type TelemetryTopic = { status: 'parsed'; tenantId: string; deviceId: string } | { status: 'invalid'; message: string };

/** The subscription a replica takes: an MQTT 5 shared subscription, so replicas in the group split the traffic. */
export function telemetrySubscription(root: string, shareGroup: string): string {
  return `$share/${shareGroup}/${root}/+/+/telemetry`;
}

export function parseTelemetryTopic(topic: string, root: string): TelemetryTopic {
  const levels = topic.split('/');
  if (levels.length !== 4 || levels[0] !== root || levels[3] !== 'telemetry') {
    return { status: 'invalid', message: `the topic is not ${root}/<tenant>/<device>/telemetry` };
  }
  const tenantId = levels[1]!;
  const deviceId = levels[2]!;
  // A topic that was not valid UTF-8 decodes with U+FFFD, which no ID may hold.
  if (!ID_PATTERN.test(tenantId)) return { status: 'invalid', message: 'the topic names no valid tenant ID' };
  if (!ID_PATTERN.test(deviceId)) return { status: 'invalid', message: 'the topic names no valid device ID' };
  return { status: 'parsed', tenantId, deviceId };
}
