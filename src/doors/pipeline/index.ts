// The door pipeline's surface: what a door (HTTP ingest, admission API, Envoy RLS, MQTT, Sparkplug, LwM2M)
// imports to take the shared steps. See README.md.
export {
  callerKeyOf,
  chargeApiRequest,
  chargeMessage,
  chargeReadings,
  checkCredential,
  bodyCapOf,
  checkEdge,
  handToSink,
  handToSinkThen,
  holdReadingsCharge,
  isAcceptableName,
  type DoorParts,
  type EdgeDecision,
  type Metering,
  type SinkOutcome,
  type SinkReceiver,
} from './steps.ts';
export { startDoorParts, type SharedDoorParts } from './startDoorParts.ts';
export { authorizeSender, type Destination, type SenderCheck } from './authorizeSender.ts';
export { createEdgeLimit, type BoundedEdgeLimit, type EdgeLimit, type EdgeLimitOptions } from './edgeLimit.ts';
export { cachedCredentialLookup, type CredentialLookup } from './credentialCache.ts';
export { createCountingSink, type CountingSink } from './countingSink.ts';
// The NATS sink and the broker consumer are loaded where they are started (startDoorParts with NATS_URL, the
// MQTT and Sparkplug doors): the HTTP doors import this file, and nats.js and mqtt.js would otherwise cost
// every start.
export type { NatsSinkOptions } from './natsSink.ts';
export const loadBrokerConsumer = () => import('./brokerConsumer.ts');
export type { AcceptedBatch, ReadingSink, SinkAnswer, SinkRefusal } from './sink.ts';
export { decodeReadings, isObject, parseJson, readingsOf, type DecodedReadings } from './readings.ts';
export { SEND_TIME_MAX_AGE_MS, SEND_TIME_MAX_AHEAD_MS, sendTimeOutOfWindow, type SendTimeOutOfWindow } from './sendTimeWindow.ts';
export { brokerMessageDropper, brokerMessageId, handToSinkUntilTaken, type BrokerDelivery, type Decoded, type DropReason } from './handOff.ts';
export type { InboundMessage, MqttConsumer, MqttConsumerOptions, MqttConsumerStats, Settled } from './brokerConsumer.ts';
