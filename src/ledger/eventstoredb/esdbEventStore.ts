import { EventStoreDBClient } from '@eventstore/db-client';
import type { EventStore } from '../eventStore.ts';
import { createOpenSubscriptions } from '../openSubscriptions.ts';
import { appendToStream } from './appendToStream.ts';
import { headPosition } from './headPosition.ts';
import { readAll } from './readAll.ts';
import { readStream } from './readStream.ts';
import { subscribe } from './subscribe.ts';

/**
 * The EventStore port on EventStoreDB / KurrentDB (EVENTSTORE_URL, e.g. `esdb://localhost:2113?tls=false`).
 * Positions are $all's commit/prepare pair, assigned at commit, so no reader ever has to wait behind an
 * open transaction as on PostgreSQL. close() ends the subscriptions and the connection.
 */
export function createEventStoreDbEventStore(connectionString: string): EventStore {
  const client = EventStoreDBClient.connectionString(connectionString);
  const subscriptions = createOpenSubscriptions();

  return {
    append: (stream, events, options) => appendToStream(client, stream, events, options?.expectedRevision),
    readStream: (stream, options) => readStream(client, stream, options),
    readAll: (after, maxCount) => readAll(client, after, maxCount),
    headPosition: () => headPosition(client),
    subscribe: (after, options) => subscriptions.track(subscribe(client, after, options?.types)),
    async close() {
      await subscriptions.closeAll();
      await client.dispose();
    },
  };
}
