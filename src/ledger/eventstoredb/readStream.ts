import { BACKWARDS, END, FORWARDS, START, StreamNotFoundError, type EventStoreDBClient } from '@eventstore/db-client';
import type { ReadStreamOptions, RecordedEvent } from '../eventStore.ts';
import { toRecordedEvent } from './recordedEvent.ts';

export async function readStream(client: EventStoreDBClient, stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
  const direction = options.direction ?? 'forwards';
  const fromRevision = options.fromRevision ?? (direction === 'forwards' ? 'start' : 'end');
  const events: RecordedEvent[] = [];
  try {
    for await (const resolved of client.readStream(stream, {
      fromRevision: fromRevision === 'start' ? START : fromRevision === 'end' ? END : fromRevision,
      direction: direction === 'forwards' ? FORWARDS : BACKWARDS,
      ...(options.maxCount === undefined ? {} : { maxCount: options.maxCount }),
    })) {
      if (resolved.event) events.push(toRecordedEvent(resolved.event));
    }
  } catch (error) {
    // The port reads an absent stream as empty.
    if (error instanceof StreamNotFoundError) return [];
    throw error;
  }
  return events;
}
