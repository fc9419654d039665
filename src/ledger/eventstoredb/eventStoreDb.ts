import { laterCheckpoint, type EventStore } from '../eventStore.ts';
import { createOpenSubscriptions } from '../openSubscriptions.ts';
import { appendToStream, DEFAULT_APPEND_RETRY, type AppendRetry } from './append.ts';
import { connect, type EsdbClient } from './client.ts';
import { headPosition, readAll, readStream } from './read.ts';
import { subscribe } from './subscribe.ts';

export interface EventStoreDbOptions {
  /** Attempts and backoff of an append after a deadline passed or the server could not be reached. */
  appendRetry?: AppendRetry;
}

/**
 * The EventStore port on EventStoreDB / KurrentDB (EVENTSTORE_URL, e.g. `esdb://localhost:2113?tls=false`),
 * or on a client given (the adapter's unit tests give a fake of the client's boundary). Positions are $all's
 * commit/prepare pair, assigned at commit, so no reader ever has to wait behind an open transaction as on
 * PostgreSQL. close() ends the subscriptions and the connection.
 */
export function createEventStoreDbEventStore(connection: string | EsdbClient, options: EventStoreDbOptions = {}): EventStore {
  const client = typeof connection === 'string' ? connect(connection) : connection;
  const retry = options.appendRetry ?? DEFAULT_APPEND_RETRY;
  const subscriptions = createOpenSubscriptions();

  return {
    append: (stream, events, appendOptions) => appendToStream(client, stream, events, appendOptions?.expectedRevision, retry),
    readStream: (stream, readOptions) => readStream(client, stream, readOptions),
    readAll: (after, maxCount, readOptions) => readAll(client, after, maxCount, readOptions?.types),
    async readAllPage(after, maxCount, readOptions) {
      // The head first: positions are final at commit here, so a short page read after it holds every
      // event of its types up to that head.
      const head = await headPosition(client);
      const events = await readAll(client, after, maxCount, readOptions?.types);
      const last = events.at(-1);
      if (last && events.length === maxCount) return { events, through: last.position };
      return { events, through: laterCheckpoint(laterCheckpoint(after, last?.position ?? 'start'), head ?? 'start') };
    },
    firstPending: async (after, readOptions) => (await readAll(client, after, 1, readOptions?.types))[0],
    headPosition: () => headPosition(client),
    subscribe: (after, subscribeOptions) => subscriptions.track(subscribe(client, after, subscribeOptions?.types)),
    async close() {
      await subscriptions.closeAll();
      await client.dispose();
    },
  };
}
