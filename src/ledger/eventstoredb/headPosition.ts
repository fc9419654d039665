import { BACKWARDS, END, type EventStoreDBClient } from '@eventstore/db-client';
import type { Position } from '../eventStore.ts';
import { isSystemEvent } from './recordedEvent.ts';

const PAGE = 100;

/**
 * The position of the last ledger event in $all. EventStoreDB assigns positions at commit, so whatever
 * this returns is already readable: there is no held-back window as on PostgreSQL.
 */
export async function headPosition(client: EventStoreDBClient): Promise<Position | undefined> {
  let from: Position | undefined;
  for (;;) {
    let received = 0;
    for await (const resolved of client.readAll({ fromPosition: from ?? END, direction: BACKWARDS, maxCount: PAGE })) {
      received++;
      const event = resolved.event;
      if (!event) continue;
      if (!isSystemEvent(event)) return event.position;
      from = event.position;
    }
    // A backwards read from a position includes it; a page of nothing but that one record is the start.
    if (received < PAGE) return undefined;
  }
}
