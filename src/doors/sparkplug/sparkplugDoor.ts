// The Sparkplug B door: for each NDATA or DDATA message, the tenant from the group ID, the size cap, the
// payload decoded with sparkplug-payload, and its metrics with a value charged as readings on the SPARKPLUG
// allowance at arrival (Sparkplug has no per-message charge: the catalog's messageChargedAllowances), then
// the sink. Like the MQTT door, every message settles, so no publisher can hold the consumer up, and the
// readings charge is held until the sink answered (counted once for a redelivered message, rejected when the
// sink refuses it: ../pipeline/handOff.ts).
import { HeldCharge } from '../../governance/index.ts';
import type { Logger } from '../../logger.ts';
import {
  bodyCapOf,
  brokerMessageDropper,
  brokerMessageId,
  handToSinkUntilTaken,
  holdReadingsCharge,
  type DoorParts,
  type DropReason,
  type InboundMessage,
  type Metering,
  type Settled,
} from '../pipeline/index.ts';
import { decodeSparkplugMetrics } from './metrics.ts';
import { parseSparkplugTopic, tenantOfGroup } from './topics.ts';

export interface SparkplugDoorOptions {
  parts: Pick<DoorParts, 'governor' | 'sink'>;
  logger: Logger;
  groupTenants: ReadonlyMap<string, string>;
  maxPayloadBytes: number;
  now?: () => number;
  onDropped?: (reason: DropReason) => void;
}

export function createSparkplugHandler(options: SparkplugDoorOptions): (message: InboundMessage, signal: AbortSignal) => Promise<Settled> {
  const { parts, logger, groupTenants, maxPayloadBytes } = options;
  const now = options.now ?? Date.now;
  const drop = brokerMessageDropper('Sparkplug', logger, options.onDropped);

  return async (message, signal) => {
    const arrivedAtMs = now();
    const topic = parseSparkplugTopic(message.topic);
    if (topic.status === 'invalid') return drop('topic', message, topic.message);
    const tenantId = tenantOfGroup(topic.group, groupTenants);
    if (tenantId === null) return drop('topic', message, 'the group maps to no valid tenant ID');
    const capBytes = bodyCapOf(parts, maxPayloadBytes);
    if (message.payload.length > capBytes) return drop('too-large', message, `${message.payload.length} bytes, over ${capBytes}`);

    const deviceId = topic.device === null ? topic.edgeNode : `${topic.edgeNode}/${topic.device}`;
    // No message charge on SPARKPLUG (the catalog's messageChargedAllowances): decode, then the readings.
    const decoded = decodeSparkplugMetrics(message.payload, deviceId);
    // Over a bound of payloadBounds.ts (nesting, metric count): dropped before the decoder runs, and settled,
    // so the broker never delivers it again.
    if (decoded.status === 'over-bounds') return drop('too-complex', message, decoded.message);
    if (decoded.status === 'invalid') return drop('malformed', message, decoded.message);
    if (decoded.readingCount === 0) return 'settled';
    const metering: Metering = { tenantId, allowance: 'SPARKPLUG', atMs: arrivedAtMs, clientKey: `device:${deviceId}` };
    const charge = new HeldCharge();
    if (!holdReadingsCharge(parts, metering, decoded.readingCount, charge).admitted) return 'settled';

    return handToSinkUntilTaken(
      parts.sink,
      {
        tenantId,
        route: 'sparkplug',
        allowance: 'SPARKPLUG',
        credential: { kind: 'device', subject: deviceId },
        requestId: brokerMessageId(message),
        receivedAtMs: arrivedAtMs,
        units: decoded.readingCount,
        items: decoded.value as unknown as Record<string, unknown>[],
      },
      signal,
      logger,
      { charge, redelivered: message.redelivered === true },
    );
  };
}
