// Builds the Sparkplug B door from the settings: a consumer of its own on the platform broker (client ID
// `<MQTT_CLIENT_ID>-sparkplug`, a persistent session) with shared subscriptions to NDATA and DDATA, feeding
// the Sparkplug handler; admitted readings go to the same sink as every door.
import type { Settings } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import { loadBrokerConsumer, type DoorParts, type DropReason, type MqttConsumer } from '../pipeline/index.ts';
import { createSparkplugHandler } from './sparkplugDoor.ts';
import { sparkplugSubscriptions } from './topics.ts';

export type SparkplugDoorSettings = Pick<
  Settings,
  'mqttShareGroup' | 'mqttClientId' | 'mqttSessionExpirySeconds' | 'sparkplugGroupTenants' | 'ingestMaxBodyBytes'
> & { mqttUrl: string };

export interface SparkplugDoorParts {
  settings: SparkplugDoorSettings;
  parts: Pick<DoorParts, 'governor' | 'sink'>;
  logger: Logger;
  onDropped?: (reason: DropReason) => void;
}

export async function startSparkplugDoor(parts: SparkplugDoorParts): Promise<MqttConsumer> {
  const { settings, logger } = parts;
  const { startBrokerDoor } = await loadBrokerConsumer();
  return startBrokerDoor('Sparkplug', {
    url: settings.mqttUrl,
    clientId: `${settings.mqttClientId}-sparkplug`,
    subscriptions: sparkplugSubscriptions(settings.mqttShareGroup),
    sessionExpirySeconds: settings.mqttSessionExpirySeconds,
    logger,
    handle: createSparkplugHandler({
      parts: parts.parts,
      logger,
      groupTenants: settings.sparkplugGroupTenants,
      maxPayloadBytes: settings.ingestMaxBodyBytes,
      onDropped: parts.onDropped,
    }),
  });
}
