import { START, eventTypeFilter, excludeSystemEvents, type AllStreamResolvedEvent } from '@eventstore/db-client';
import { comparePositions, type Checkpoint, type RecordedEvent, type Subscription } from '../eventStore.ts';
import type { EsdbClient } from './client.ts';
import { isSystemEvent, toRecordedEvent } from './read.ts';

/**
 * A catch-up subscription to $all: the server reads from `after` (exclusive), then switches to live. The
 * event-type filter runs on the server; system events are dropped here as well, for a filter that lets a
 * user-typed event of a $-stream through.
 *
 * The call is cancelled however the subscription ends: close(), a `break` out of the caller's loop, or a
 * failure. The client's stream emits 'error' as soon as the call fails, which may be before anyone iterates
 * (an 'error' without a listener would end the process), so a listener is attached at once and the
 * failure is thrown to the first next().
 */
export function subscribe(client: EsdbClient, after: Checkpoint, types?: readonly string[]): Subscription {
  const filter = types ? eventTypeFilter({ regex: exactlyOneOf(types) }) : excludeSystemEvents();
  const source = client.subscribeToAll({ fromPosition: after === 'start' ? START : after, filter });
  let closed = false;
  let failure: { error: unknown } | undefined;
  source.on('error', (error: unknown) => {
    failure ??= { error };
  });
  let unsubscribed: Promise<void> | undefined;
  const unsubscribe = () => (unsubscribed ??= source.unsubscribe().catch(() => {}));

  async function* follow(): AsyncGenerator<RecordedEvent> {
    try {
      if (failure && !closed) throw failure.error;
      for await (const resolved of source as AsyncIterable<AllStreamResolvedEvent>) {
        const event = resolved.event;
        if (!event || isSystemEvent(event)) continue;
        if (after !== 'start' && comparePositions(event.position, after) <= 0) continue;
        yield toRecordedEvent(event);
      }
    } catch (error) {
      // Closing cancels the call; the stream then fails with a cancellation, which is the normal end.
      if (!closed) throw error;
    } finally {
      await unsubscribe();
    }
  }

  const events = follow();
  return {
    [Symbol.asyncIterator]: () => events,
    async close() {
      if (closed) return;
      closed = true;
      await unsubscribe();
      await events.return(undefined);
    },
  };
}

function exactlyOneOf(types: readonly string[]): string {
  const escaped = types.map((type) => type.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  // No types: a pattern nothing matches (an empty alternation would match the empty type).
  return escaped.length === 0 ? '(?!)' : `^(?:${escaped.join('|')})$`;
}
