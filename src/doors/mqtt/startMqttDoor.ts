// Builds the MQTT telemetry door from the settings: one consumer with a persistent session and the shared
// subscription `$share/<group>/<root>/+/+/telemetry`, feeding the telemetry handler, whose admitted readings
// go to the same sink as HTTP ingest.
import type { Settings } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { loadBrokerConsumer, type DoorParts, type DropReason, type MqttConsumer, type SendTimeOutOfWindow } from '../pipeline/index.ts';
import { createTelemetryHandler } from './telemetryDoor.ts';
import { telemetrySubscription } from './topics.ts';

export type MqttDoorSettings = Pick<
  Settings,
  'mqttTopicRoot' | 'mqttShareGroup' | 'mqttClientId' | 'mqttSessionExpirySeconds' | 'backlogAfterSeconds' | 'ingestMaxBodyBytes'
> & { mqttUrl: string };

export interface MqttDoorParts {
  settings: MqttDoorSettings;
  parts: Pick<DoorParts, 'governor' | 'sink'>;
  logger: Logger;
  onDropped?: (reason: DropReason) => void;
  onSendTimeOutOfWindow?: (reason: SendTimeOutOfWindow) => void;
  now?: () => number;
}

export async function startMqttDoor(parts: MqttDoorParts): Promise<MqttConsumer> {
  const { settings, logger } = parts;
  const { startBrokerDoor } = await loadBrokerConsumer();
  return startBrokerDoor('MQTT', {
    url: settings.mqttUrl,
    clientId: settings.mqttClientId,
    subscriptions: [telemetrySubscription(settings.mqttTopicRoot, settings.mqttShareGroup)],
    sessionExpirySeconds: settings.mqttSessionExpirySeconds,
    logger,
    handle: createTelemetryHandler({
      parts: parts.parts,
      logger,
      topicRoot: settings.mqttTopicRoot,
      backlogAfterMs: settings.backlogAfterSeconds * 1000,
      maxPayloadBytes: settings.ingestMaxBodyBytes,
      onDropped: parts.onDropped,
      onSendTimeOutOfWindow: parts.onSendTimeOutOfWindow,
      now: parts.now,
    }),
  });
}
