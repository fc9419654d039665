import { START, eventTypeFilter, excludeSystemEvents, type EventStoreDBClient } from '@eventstore/db-client';
import { comparePositions, type Checkpoint, type RecordedEvent, type Subscription } from '../eventStore.ts';
import { isSystemEvent, toRecordedEvent } from './recordedEvent.ts';

/**
 * A catch-up subscription to $all: the server reads from `after` (exclusive), then switches to live. The
 * event-type filter runs on the server; system events are dropped here as well, for a filter that lets a
 * user-typed event of a $-stream through.
 */
export function subscribe(client: EventStoreDBClient, after: Checkpoint, types?: readonly string[]): Subscription {
  const filter = types ? eventTypeFilter({ regex: exactlyOneOf(types) }) : excludeSystemEvents();
  const source = client.subscribeToAll({ fromPosition: after === 'start' ? START : after, filter });
  let closed = false;

  async function* follow(): AsyncGenerator<RecordedEvent> {
    try {
      for await (const resolved of source) {
        const event = resolved.event;
        if (!event || isSystemEvent(event)) continue;
        if (after !== 'start' && comparePositions(event.position, after) <= 0) continue;
        yield toRecordedEvent(event);
      }
    } catch (error) {
      // Closing cancels the call; the stream then fails with a cancellation, which is the normal end.
      if (!closed) throw error;
    }
  }

  const events = follow();
  return {
    [Symbol.asyncIterator]: () => events,
    async close() {
      if (closed) return;
      closed = true;
      await source.unsubscribe();
      await events.return(undefined);
    },
  };
}

function exactlyOneOf(types: readonly string[]): string {
  const escaped = types.map((type) => type.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  // No types: a pattern nothing matches (an empty alternation would match the empty type).
  return escaped.length === 0 ? '(?!)' : `^(?:${escaped.join('|')})$`;
}
