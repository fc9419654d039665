import { EventStoreDBClient } from '@eventstore/db-client';
import type { EventStore, Subscription } from '../eventStore.ts';
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
  const subscriptions = new Set<Subscription>();

  return {
    append: (stream, events, options) => appendToStream(client, stream, events, options?.expectedRevision),
    readStream: (stream, options) => readStream(client, stream, options),
    readAll: (after, maxCount) => readAll(client, after, maxCount),
    headPosition: () => headPosition(client),
    subscribe(after, options) {
      const subscription = subscribe(client, after, options?.types);
      subscriptions.add(subscription);
      return {
        [Symbol.asyncIterator]: () => subscription[Symbol.asyncIterator](),
        async close() {
          subscriptions.delete(subscription);
          await subscription.close();
        },
      };
    },
    async close() {
      await Promise.all([...subscriptions].map((subscription) => subscription.close()));
      subscriptions.clear();
      await client.dispose();
    },
  };
}
