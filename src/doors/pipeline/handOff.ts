// Step 7 for the broker doors (MQTT, Sparkplug B). A broker message is acknowledged only once the sink took it, so a sink
// that fails (NATS down, JetStream full) is tried again, with a growing pause, until it takes the batch or
// the consumer closes: the message then stays unacknowledged and the broker keeps it. Holding the one
// message in hand is the back pressure: the broker queues the rest for the session meanwhile.
import type { Logger } from '../../logger.ts';
import type { InboundMessage, Settled } from './brokerConsumer.ts';
import type { AcceptedBatch, ReadingSink } from './sink.ts';

const FIRST_PAUSE_MS = 100;
const LONGEST_PAUSE_MS = 5_000;

/** 'settled' once the sink took the batch; 'abandoned' when `signal` aborted first (the broker keeps the message). */
export async function handToSinkUntilTaken(sink: ReadingSink, batch: AcceptedBatch, signal: AbortSignal, logger: Logger): Promise<Settled> {
  let pauseMs = FIRST_PAUSE_MS;
  for (let attempt = 1; ; attempt++) {
    if (signal.aborted) return 'abandoned';
    try {
      await sink.publish(batch);
      return 'settled';
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

/** Why a door dropped a message before charging its readings (counted on door_dropped_messages_total). */
export type DropReason = 'topic' | 'too-large' | 'too-complex' | 'malformed' | 'foreign-device' | 'unauthorized' | 'unsupported-format';

/** What a door's decoder gives back: the decoded value and its readings, or what is wrong. */
export type Decoded<T> = { status: 'decoded'; value: T; readingCount: number } | { status: 'invalid'; message: string };
