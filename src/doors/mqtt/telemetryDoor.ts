// The MQTT door for device telemetry (LIVE, and BACKLOG for what the broker stored): for each message on
// `<root>/<tenant>/<device>/telemetry`, in the order of docs/governance-model.md,
//   1. the tenant and device from the topic (the broker authenticated the device; a topic that names none is dropped);
//   2. which allowance pays: BACKLOG at the send time when the `sent-at` user property is older than the
//      backlog threshold, else LIVE at arrival (sendTime.ts);
//   3. one charge for the message, before decoding;
//   4. the size cap and the decode, in the same reading format as HTTP ingest;
//   5. the readings charged (without `sent-at`, a message whose newest reading is older than the threshold is
//      charged on BACKLOG at that time here);
//   6. the sink, tried until it answers; the readings charge is held until then and counted with what the
//      sink said: admitted when it stored the batch, rejected when it refused it for its content (acknowledged
//      and skipped), not again when a redelivered message was stored by its earlier delivery (brokerMessageId).
// Every message settles: shed, dropped and refused ones too, so nothing a publisher sends can hold the consumer up.
import { HeldCharge } from '../../governance/index.ts';
import type { Logger } from '../../logger.ts';
import {
  bodyCapOf,
  brokerMessageDropper,
  brokerMessageId,
  chargeMessage,
  decodeReadings,
  handToSinkUntilTaken,
  holdReadingsCharge,
  isAcceptableName,
  type DoorParts,
  type DropReason,
  type InboundMessage,
  type Metering,
  type Settled,
  type SendTimeOutOfWindow,
  type SinkRefusal,
} from '../pipeline/index.ts';
import { latestReadingTime, meteringFor, sentAtOf } from './sendTime.ts';
import { parseTelemetryTopic } from './topics.ts';

export interface TelemetryDoorOptions {
  parts: Pick<DoorParts, 'governor' | 'sink'>;
  logger: Logger;
  topicRoot: string;
  backlogAfterMs: number;
  maxPayloadBytes: number;
  now?: () => number;
  /** A message dropped before its readings were charged (the Governor counts the rest). */
  onDropped?: (reason: DropReason) => void;
  /** A message the sink refused for its content after its readings were charged (the Governor counts it rejected). */
  onRefused?: (reason: SinkRefusal) => void;
  /** A send time outside the window (sendTimeWindow.ts), metered at arrival instead. */
  onSendTimeOutOfWindow?: (reason: SendTimeOutOfWindow) => void;
}

export function createTelemetryHandler(options: TelemetryDoorOptions): (message: InboundMessage, signal: AbortSignal) => Promise<Settled> {
  const { parts, logger, topicRoot, backlogAfterMs, maxPayloadBytes } = options;
  const now = options.now ?? Date.now;
  const drop = brokerMessageDropper('MQTT', logger, options.onDropped);

  // Where and when a message is metered; a send time outside the window is counted and metered at arrival.
  const meteringOf = (tenantId: string, clientKey: string, sentAtMs: number | undefined, arrivedAtMs: number): Metering => {
    const { allowance, atMs, outOfWindow } = meteringFor(sentAtMs, arrivedAtMs, backlogAfterMs);
    if (outOfWindow !== undefined) options.onSendTimeOutOfWindow?.(outOfWindow);
    return { tenantId, clientKey, allowance, atMs };
  };

  return async (message, signal) => {
    const arrivedAtMs = now();
    const topic = parseTelemetryTopic(message.topic, topicRoot);
    if (topic.status === 'invalid') return drop('topic', message, topic.message);
    const { tenantId, deviceId } = topic;
    // The pipeline's name step; parseTelemetryTopic already holds both levels to it.
    if (!isAcceptableName(tenantId)) return drop('topic', message, 'the topic names no valid tenant ID');

    const sentAtMs = sentAtOf(message.userProperties);
    const clientKey = `device:${deviceId}`;
    const metering = meteringOf(tenantId, clientKey, sentAtMs, arrivedAtMs);
    // SHED: a refused message is dropped and counted by the Governor, and acknowledged.
    if (!chargeMessage(parts, metering).admitted) return 'settled';

    // The cap follows the sink's (NATS' max_payload less the envelope): a body it could never take is dropped here.
    const capBytes = bodyCapOf(parts, maxPayloadBytes);
    if (message.payload.length > capBytes) return drop('too-large', message, `${message.payload.length} bytes, over ${capBytes}`);
    const decoded = decodeReadings(message.payload);
    if (decoded.status === 'invalid') return drop('malformed', message, decoded.message);
    const foreign = decoded.entries.findIndex((entry) => entry.deviceId !== undefined && entry.deviceId !== deviceId);
    if (foreign >= 0) return drop('foreign-device', message, `readings[${foreign}] names another device than the topic`);

    const readingsMetering = sentAtMs === undefined ? meteringOf(tenantId, clientKey, latestReadingTime(decoded.entries), arrivedAtMs) : metering;
    const charge = new HeldCharge();
    if (!holdReadingsCharge(parts, readingsMetering, decoded.readingCount, charge).admitted) return 'settled';

    return handToSinkUntilTaken(
      parts.sink,
      {
        tenantId,
        route: 'mqtt',
        allowance: readingsMetering.allowance,
        ...(readingsMetering.allowance === 'BACKLOG' ? { sentAtMs: readingsMetering.atMs } : {}),
        credential: { kind: 'device', subject: deviceId },
        requestId: brokerMessageId(message),
        receivedAtMs: arrivedAtMs,
        units: decoded.readingCount,
        items: decoded.entries,
      },
      signal,
      logger,
      { charge, redelivered: message.redelivered === true, onRefused: options.onRefused },
    );
  };
}
