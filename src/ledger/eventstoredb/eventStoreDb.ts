import { randomUUID } from 'node:crypto';
import { MAX_APPEND_BYTES } from '../appendSize.ts';
import { laterCheckpoint, WrongExpectedRevision, type EventStore, type LedgerIdentity } from '../eventStore.ts';
import { createOpenSubscriptions } from '../openSubscriptions.ts';
import { appendToStream, DEFAULT_APPEND_RETRY, type AppendRetry } from './append.ts';
import { connect, type EsdbClient } from './client.ts';
import { headPosition, IDENTITY_STREAM, readAll, readStream } from './read.ts';
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
  let identity: Promise<LedgerIdentity> | undefined;

  return {
    appendLimitBytes: MAX_APPEND_BYTES,
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
    identity() {
      identity ??= ledgerIdentity(client, retry).catch((error: unknown) => {
        identity = undefined;
        throw error;
      });
      return identity;
    },
    subscribe: (after, subscribeOptions) => subscriptions.track(subscribe(client, after, subscribeOptions?.types)),
    async close() {
      await subscriptions.closeAll();
      await client.dispose();
    },
  };
}

/**
 * The server's ledger id: the first event of IDENTITY_STREAM, appended with a new uuid when the stream does
 * not exist yet. Appended at 'no_stream', so of two processes that start on an empty server one writes it and
 * the other reads it. It lives and dies with the server's data, as the checkpoints that name it should.
 */
async function ledgerIdentity(client: EsdbClient, retry: AppendRetry): Promise<LedgerIdentity> {
  for (let attempt = 1; ; attempt++) {
    const [first] = await readStream(client, IDENTITY_STREAM, { maxCount: 1 });
    const id = (first?.data as { ledgerId?: unknown } | undefined)?.ledgerId;
    if (typeof id === 'string') return { kind: 'eventstoredb', id };
    if (first) throw new Error(`EventStoreDB stream ${IDENTITY_STREAM} does not start with a ledger id`);
    try {
      await appendToStream(client, IDENTITY_STREAM, [{ type: 'LedgerIdentified', data: { ledgerId: randomUUID() } }], 'no_stream', retry);
    } catch (error) {
      // Another process named the ledger first: read its id.
      if (!(error instanceof WrongExpectedRevision) || attempt >= 3) throw error;
    }
  }
}
