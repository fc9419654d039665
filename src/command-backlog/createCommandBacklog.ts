// Builds the command backlog for the ledger in use. PostgreSQL/PGlite: the guard row and the ledger event
// commit in one transaction. EventStoreDB (EVENTSTORE_URL): the tenant's commands stream is the guard,
// appended with an expected revision (createStreamCommandBacklog).
import type { Db } from '../db/db.ts';
import type { EventStore } from '../ledger/index.ts';
import { DEFAULT_COMMAND_TTL_MS } from './types.ts';
import { createDatabaseCommandBacklog } from './postgres/createDatabaseCommandBacklog.ts';
import { createStreamCommandBacklog } from './stream/createStreamCommandBacklog.ts';
import type { CeilingSource, CommandBacklog } from './types.ts';

export interface CommandBacklogSettings {
  db: Db;
  store: EventStore;
  ceilings: CeilingSource;
  /** 'database' (default) when the ledger is in `db`; 'stream' when `store` is EventStoreDB. */
  ledger?: 'database' | 'stream';
  commandTtlMs?: number;
  now?: () => Date;
}

export function createCommandBacklog({
  db,
  store,
  ceilings,
  ledger = 'database',
  commandTtlMs = DEFAULT_COMMAND_TTL_MS,
  now = () => new Date(),
}: CommandBacklogSettings): CommandBacklog {
  if (ledger === 'stream') return createStreamCommandBacklog({ store, db, ceilings, commandTtlMs, now });
  return createDatabaseCommandBacklog(db, { ceilings, commandTtlMs, now });
}
