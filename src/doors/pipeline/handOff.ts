// Step 7 for the broker doors (MQTT, Sparkplug B). A broker message is acknowledged only once the sink answered
// for it, so a sink that fails (NATS down, JetStream full) is tried again, with a growing pause, until it
// answers or the consumer closes: the message then stays unacknowledged and the broker keeps it. Holding the
// one message in hand is the back pressure: the broker queues the rest for the session meanwhile.
//
// A sink's refusal is an answer, not a fault: a message it can never take (too large for NATS with its
// envelope, not serialisable) is acknowledged and skipped at once, so it cannot hold up every tenant's messages
// behind it, and its held readings charge is counted as rejected, not admitted.
import { createHash, randomUUID } from 'node:crypto';
import type { HeldCharge } from '../../governance/index.ts';
import type { Logger } from '../../logger.ts';
import type { InboundMessage, Settled } from './brokerConsumer.ts';
import type { AcceptedBatch, ReadingSink, SinkAnswer, SinkRefusal } from './sink.ts';

const FIRST_PAUSE_MS = 100;
const LONGEST_PAUSE_MS = 5_000;

/** What a broker door knows of the delivery it hands on, so its readings charge is counted once. */
export interface BrokerDelivery {
  /**
   * The readings charge (Governor.hold via holdReadingsCharge), settled with what became of the message:
   * admitted when the sink stored it, rejected when the sink refused it, withdrawn when the consumer closed
   * first (the broker delivers it again and that delivery is charged) or when the sink already held it from
   * an earlier delivery (see `redelivered`).
   */
  charge: HeldCharge;
  /**
   * The broker delivered this message before (MQTT's DUP flag: a QoS 1 message resent on the session after a
   * reconnect). When the sink answers that it already holds its message ID, the earlier delivery was stored and
   * charged, so this one is not counted again. A message not redelivered that the sink already holds was
   * stored by this delivery's own earlier attempt (its acknowledgement lost): counted as admitted, once.
   */
  redelivered: boolean;
  /** Told when the sink refused the message for its content. */
  onRefused?: (reason: SinkRefusal) => void;
}

/**
 * 'settled' once the sink answered (stored, already held or refused); 'abandoned' when `signal` aborted first
 * (the broker keeps the message). With `delivery`, its held charge is settled with the outcome.
 */
export async function handToSinkUntilTaken(
  sink: ReadingSink,
  batch: AcceptedBatch,
  signal: AbortSignal,
  logger: Logger,
  delivery?: BrokerDelivery,
): Promise<Settled> {
  const answer = await sinkAnswerFor(sink, batch, signal, logger);
  if (answer === 'abandoned') {
    delivery?.charge.settle('withdrawn');
    return 'abandoned';
  }
  if (answer.status === 'refused') {
    delivery?.charge.settle('rejected');
    delivery?.onRefused?.(answer.reason);
    logger.warn({ tenantId: batch.tenantId, route: batch.route, reason: answer.reason, detail: answer.message }, 'the reading sink refused the message; it is acknowledged and skipped');
    return 'settled';
  }
  delivery?.charge.settle(answer.status === 'duplicate' && delivery.redelivered ? 'withdrawn' : 'admitted');
  return 'settled';
}

/** The sink's answer, tried again while the sink fails; 'abandoned' when `signal` aborted first. */
async function sinkAnswerFor(sink: ReadingSink, batch: AcceptedBatch, signal: AbortSignal, logger: Logger): Promise<SinkAnswer | 'abandoned'> {
  let pauseMs = FIRST_PAUSE_MS;
  for (let attempt = 1; ; attempt++) {
    if (signal.aborted) return 'abandoned';
    try {
      return await sink.publish(batch);
    } catch (error) {
      if (attempt === 1 || attempt % 20 === 0) {
        logger.error({ err: error, tenantId: batch.tenantId, route: batch.route, attempt }, 'the reading sink failed; the message is held and tried again');
      }
    }
    if (!(await pause(pauseMs, signal))) return 'abandoned';
    pauseMs = Math.min(pauseMs * 2, LONGEST_PAUSE_MS);
  }
}

function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * How a broker door drops a message it will not charge (no tenant in the topic, too large, malformed): it is
 * counted and acknowledged, so nothing a publisher sends can hold the consumer up. Logged at debug only: a
 * publisher could otherwise fill the log.
 */
export function brokerMessageDropper(
  door: string,
  logger: Logger,
  onDropped: ((reason: DropReason) => void) | undefined,
): (reason: DropReason, message: InboundMessage, detail: string) => Settled {
  return (reason, message, detail) => {
    onDropped?.(reason);
    logger.debug({ reason, topic: message.topic.slice(0, 200), detail }, `${door} message dropped`);
    return 'settled';
  };
}

/**
 * What identifies a broker message across its deliveries, for the sink's de-duplication (the JetStream
 * message ID): a QoS 1 message the broker resends on a persistent session after a reconnect keeps its packet
 * identifier (MQTT 5, 4.4), topic, properties and payload, so it gets the same ID. Packet identifiers are
 * reused once acknowledged (65,535 of them per session), so the ID is a digest of all of these: two different
 * messages share one only when the same session receives the same topic, properties and payload under the
 * same packet identifier, i.e. an identical message 65,535 packets later, and only inside the sink's duplicate
 * window (2 min) does that matter (README.md, "Exactly what is charged once"). A QoS 0 message is never
 * resent: it gets a fresh ID.
 */
export function brokerMessageId(message: InboundMessage): string {
  if (message.packetId === undefined || message.qos === 0) return randomUUID();
  const digest = createHash('sha256')
    .update(message.session ?? '')
    .update('\0')
    .update(String(message.packetId))
    .update('\0')
    .update(message.topic)
    .update('\0')
    .update(message.userProperties === undefined ? '' : JSON.stringify(message.userProperties))
    .update('\0')
    .update(message.payload)
    .digest('base64url');
  return `mqtt-${digest}`;
}

/** Why a door dropped a message before charging its readings (counted on door_dropped_messages_total). */
export type DropReason = 'topic' | 'too-large' | 'too-complex' | 'malformed' | 'foreign-device' | 'unauthorized' | 'unsupported-format';

/** What a door's decoder gives back: the decoded value and its readings, or what is wrong. */
export type Decoded<T> = { status: 'decoded'; value: T; readingCount: number } | { status: 'invalid'; message: string };
