import { FORWARDS, START, type EventStoreDBClient, type Position } from '@eventstore/db-client';
import { comparePositions, type Checkpoint, type RecordedEvent } from '../eventStore.ts';
import { isSystemEvent, toRecordedEvent } from './recordedEvent.ts';

/**
 * Up to maxCount ledger events after `after`. Two differences from the port are bridged here: a read of
 * $all from a position includes the event at that position (subscriptions exclude it), and $all holds
 * system events. Those are skipped and reading goes on, so a short page always means the end of $all:
 * a projection runner takes an empty page for "caught up".
 */
export async function readAll(client: EventStoreDBClient, after: Checkpoint, maxCount: number): Promise<RecordedEvent[]> {
  if (!Number.isInteger(maxCount) || maxCount < 0) throw new RangeError(`maxCount must be a whole number >= 0, got ${maxCount}`);
  const events: RecordedEvent[] = [];
  let from: Position | undefined = after === 'start' ? undefined : after;
  while (events.length < maxCount) {
    // One more than needed: the first record may be `from` itself.
    const want = maxCount - events.length + 1;
    let received = 0;
    for await (const resolved of client.readAll({ fromPosition: from ?? START, direction: FORWARDS, maxCount: want })) {
      received++;
      const event = resolved.event;
      if (!event || (from && comparePositions(event.position, from) <= 0)) continue;
      from = event.position;
      if (isSystemEvent(event)) continue;
      events.push(toRecordedEvent(event));
      if (events.length === maxCount) break;
    }
    if (received < want) break;
  }
  return events;
}
