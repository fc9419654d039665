import type { Db } from '../../db/db.ts';
import type { EventStore } from '../eventStore.ts';
import { createOpenSubscriptions } from '../openSubscriptions.ts';
import { appendToStream } from './appendToStream.ts';
import { createAppendSignal } from './appendSignal.ts';
import { firstPending, readAll, readAllPage, readHeadPosition, readStream } from './read.ts';
import { subscribe, type SubscribeTiming } from './subscribe.ts';

export type PostgresEventStoreOptions = Partial<SubscribeTiming>;

const DEFAULT_TIMING: SubscribeTiming = { pageSize: 500, pollIntervalMs: 500, heldBackPollMs: 50 };

/**
 * The EventStore port on PostgreSQL or PGlite (migration 0001_ledger.sql). The store does not own `db`:
 * close() ends its subscriptions and its LISTEN, and the caller closes the database.
 */
export function createPostgresEventStore(db: Db, options: PostgresEventStoreOptions = {}): EventStore {
  const timing: SubscribeTiming = { ...DEFAULT_TIMING, ...options };
  const signal = createAppendSignal(db);
  const subscriptions = createOpenSubscriptions();

  return {
    append: (stream, events, appendOptions) => appendToStream(db, stream, events, appendOptions),
    readStream: (stream, readOptions) => readStream(db, stream, readOptions),
    readAll: (after, maxCount, readOptions) => readAll(db, after, maxCount, readOptions?.types),
    readAllPage: (after, maxCount, readOptions) => readAllPage(db, after, maxCount, readOptions?.types, readOptions?.dataAsJson),
    firstPending: (after, readOptions) => firstPending(db, after, readOptions?.types),
    headPosition: () => readHeadPosition(db),
    async identity() {
      // Made by migration 0090_ledger_identity.sql, once per database.
      const { rows } = await db.query<{ id: string }>('SELECT id::text AS id FROM gl_ledger_identity');
      if (!rows[0]) throw new Error('gl_ledger_identity is empty: the database was not migrated');
      return { kind: 'postgres', id: rows[0].id };
    },
    subscribe: (after, subscribeOptions) => subscriptions.track(subscribe(db, signal, after, subscribeOptions?.types, timing)),
    async close() {
      await subscriptions.closeAll();
      await signal.close();
    },
  };
}
