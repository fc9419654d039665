// One MQTT 5 consumer for the broker doors (MQTT telemetry, Sparkplug B): a persistent session (the broker keeps its subscriptions and queues QoS 1 messages
// while it is away, which is what the backlog drains), shared subscriptions, and acknowledgements that wait
// for the door. mqtt.js hands messages over one at a time and sends the PUBACK only when `handleMessage`
// calls back, so a message is acknowledged exactly when the door's handler has settled it: the sink took it,
// or its shed or drop was counted. A handler that fails unexpectedly is logged and the message acknowledged
// (a poison message must not be redelivered forever); a consumer that closes while a message is in hand
// does not acknowledge it, and the broker delivers it again to the session. A clean stop (`close({ endSession:
// true })`, the service's SIGTERM) ends the session instead, so nothing is left on the broker: it unsubscribes
// (the shared subscription's other members take the traffic from then on), lets the messages in hand settle
// and be acknowledged (at most CLEAN_STOP_DRAIN_MS), then disconnects with session expiry 0. A crash, or a
// close without endSession, leaves the session for the next start to drain.
import mqtt, { type IClientOptions, type IPublishPacket, type MqttClient } from 'mqtt';
import type { Logger } from '../../logger.ts';

export interface InboundMessage {
  topic: string;
  payload: Buffer;
  qos: 0 | 1 | 2;
  userProperties?: Record<string, string | string[]>;
  /** The session it was delivered on (the consumer's client ID). */
  session?: string;
  /** The MQTT packet identifier (QoS 1 and 2 only): the broker resends an unacknowledged message under the same one. */
  packetId?: number;
  /** The broker delivered it before (the DUP flag): resent on the session after a reconnect, unacknowledged. */
  redelivered?: boolean;
}

/** What a handler says about a message: settled (acknowledge it) or abandoned (the consumer is closing). */
export type Settled = 'settled' | 'abandoned';

export interface MqttConsumerOptions {
  url: string;
  /** Stable per replica: the persistent session belongs to it. */
  clientId: string;
  /** Topic filters, subscribed at QoS 1 (shared subscriptions: `$share/<group>/<filter>`). */
  subscriptions: readonly string[];
  /** How long the broker keeps the session (and queues for it) after a disconnect. */
  sessionExpirySeconds: number;
  handle(message: InboundMessage, signal: AbortSignal): Promise<Settled>;
  logger: Logger;
  username?: string;
  password?: string;
}

export interface MqttConsumerStats {
  connected: boolean;
  /** Messages the broker delivered (redeliveries included) since the consumer started. */
  received: number;
  acknowledged: number;
  handlerFaults: number;
  /** Messages handed to the handler and not yet settled (mqtt.js hands one at a time; more only across a reconnect). */
  inHand: number;
  /** How long the oldest message in hand has waited for its handler (0 with none): a sink retried for long shows here. */
  oldestInHandMs: number;
  /** Connections made since the consumer started (1 after the first): reconnects are this less one. */
  connects: number;
}

export interface MqttConsumer {
  /** Resolves true once connected and subscribed, false when that did not happen within `timeoutMs`. */
  ready(timeoutMs: number): Promise<boolean>;
  stats(): MqttConsumerStats;
  /**
   * Stops taking messages. By default one in hand is not acknowledged and the session stays on the broker (its
   * queue is delivered again to the next session of this client id). With `endSession` (a clean stop) the
   * messages in hand settle first and the session is ended (expiry 0): nothing of this consumer stays on the broker.
   */
  close(options?: { endSession?: boolean }): Promise<void>;
}

export function startMqttConsumer(options: MqttConsumerOptions): MqttConsumer {
  const { logger } = options;
  const stopping = new AbortController();
  const stats = { connected: false, received: 0, acknowledged: 0, handlerFaults: 0, connects: 0 };
  let subscribed = false;
  const waiters = new Set<() => void>();
  // Messages handed to the handler and not yet settled (with when each was handed over), and who waits for
  // none (a clean stop).
  const inHand = new Map<InboundMessage, number>();
  const idleWaiters = new Set<() => void>();
  const settledOne = (message: InboundMessage) => {
    inHand.delete(message);
    if (inHand.size === 0) for (const wake of idleWaiters) wake();
  };

  const clientOptions: IClientOptions = {
    clientId: options.clientId,
    protocolVersion: 5,
    clean: false,
    properties: { sessionExpiryInterval: options.sessionExpirySeconds },
    reconnectPeriod: 1000,
    connectTimeout: 10_000,
    username: options.username,
    password: options.password,
    // The consumer must never stop on its own: reconnects go on until close().
    resubscribe: false,
  };
  const client: MqttClient = mqtt.connect(options.url, clientOptions);

  client.handleMessage = (packet: IPublishPacket, callback: (error?: Error) => void) => {
    stats.received++;
    const message: InboundMessage = {
      topic: packet.topic,
      payload: typeof packet.payload === 'string' ? Buffer.from(packet.payload) : Buffer.from(packet.payload),
      qos: packet.qos,
      userProperties: packet.properties?.userProperties,
      session: options.clientId,
      packetId: packet.messageId,
      redelivered: packet.dup,
    };
    inHand.set(message, Date.now());
    options.handle(message, stopping.signal).then(
      (outcome) => {
        settledOne(message);
        if (outcome === 'abandoned' || stopping.signal.aborted) return;
        stats.acknowledged++;
        callback();
      },
      (error: unknown) => {
        settledOne(message);
        stats.handlerFaults++;
        logger.error({ err: error, topic: message.topic }, 'MQTT message handler failed; the message is acknowledged and dropped');
        if (stopping.signal.aborted) return;
        stats.acknowledged++;
        callback();
      },
    );
  };

  client.on('connect', (connack) => {
    stats.connected = true;
    stats.connects++;
    logger.info({ clientId: options.clientId, sessionPresent: connack.sessionPresent }, 'MQTT consumer connected');
    // Subscribing again on a present session is harmless and repairs one whose subscriptions were lost.
    client.subscribe([...options.subscriptions], { qos: 1 }, (error, granted) => {
      if (error) return logger.warn({ err: error }, 'MQTT subscribe failed; retried on the next connect');
      const refused = granted?.filter((grant) => grant.qos > 2) ?? [];
      if (refused.length > 0) return logger.warn({ refused }, 'the broker refused MQTT subscriptions');
      subscribed = true;
      for (const wake of waiters) wake();
    });
  });
  client.on('close', () => {
    stats.connected = false;
    subscribed = false;
  });
  client.on('error', (error) => logger.warn({ err: error, clientId: options.clientId }, 'MQTT consumer error'));

  return {
    ready(timeoutMs) {
      if (subscribed) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiters.delete(wake);
          resolve(subscribed);
        }, timeoutMs);
        const wake = () => {
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(true);
        };
        waiters.add(wake);
      });
    },
    stats() {
      let oldest = Infinity;
      for (const since of inHand.values()) oldest = Math.min(oldest, since);
      return { ...stats, inHand: inHand.size, oldestInHandMs: inHand.size === 0 ? 0 : Math.max(0, Date.now() - oldest) };
    },
    async close(closing) {
      if (closing?.endSession && client.connected) {
        // No new deliveries; what is in hand settles and is acknowledged; then the session ends.
        await withinMs(client.unsubscribeAsync([...options.subscriptions]), CLEAN_STOP_DRAIN_MS).catch(() => undefined);
        if (inHand.size > 0) await withinMs(new Promise<void>((resolve) => idleWaiters.add(resolve)), CLEAN_STOP_DRAIN_MS).catch(() => undefined);
        stopping.abort();
        const ended = await withinMs(client.endAsync(false, { properties: { sessionExpiryInterval: 0 } }), CLEAN_STOP_DRAIN_MS).then(
          () => true,
          () => false,
        );
        if (ended) {
          logger.info({ clientId: options.clientId }, 'MQTT consumer stopped; its session is ended on the broker');
          return;
        }
        logger.warn({ clientId: options.clientId }, 'the broker did not take the MQTT DISCONNECT in time: the session stays until it expires');
      }
      stopping.abort();
      // Forced: no PUBACK for a message still in hand, and no DISCONNECT, so the session stays.
      await client.endAsync(true);
    },
  };
}

/** How long a clean stop waits for each of: the unsubscribe, the messages in hand, the DISCONNECT. */
export const CLEAN_STOP_DRAIN_MS = 3_000;

function withinMs<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`not done within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** How long a broker door's start-up waits for the broker; after that the consumer keeps reconnecting in the background. */
const READY_WAIT_MS = 5_000;

/**
 * Starts a broker door's consumer and waits a short while for it to subscribe. A broker that does not answer
 * yet must not hold up the service's start (its other doors serve meanwhile): the door says so and keeps trying.
 */
export async function startBrokerDoor(door: string, options: MqttConsumerOptions): Promise<MqttConsumer> {
  const consumer = startMqttConsumer(options);
  if (!(await consumer.ready(READY_WAIT_MS))) {
    options.logger.warn(`the MQTT broker does not answer yet: the ${door} door keeps trying in the background`);
  }
  return consumer;
}
