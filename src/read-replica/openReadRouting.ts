import type { Queryable } from '../db/index.ts';
import { openPostgres } from '../db/postgres.ts';
import type { Logger } from '../logger.ts';
import { createReadRouting, primaryOnly, type ReadRouting } from './readRouting.ts';

export interface ReadReplicaSettings {
  /** DATABASE_READ_URL: a streaming replica of DATABASE_URL's primary. */
  readDatabaseUrl?: string | undefined;
  dbSchema?: string | undefined;
  /** GOVERNANCE_READ_MAX_STALENESS_SECONDS. */
  readMaxStalenessSeconds: number;
}

/** Connections to the replica: reads only, a few at a time. */
const REPLICA_POOL = 4;

/** The routing for the service's settings: every read on the primary without DATABASE_READ_URL. */
export function openReadRouting(primary: Queryable, settings: ReadReplicaSettings, logger: Logger): ReadRouting {
  if (!settings.readDatabaseUrl) return primaryOnly(primary);
  const replica = openPostgres({
    connectionString: settings.readDatabaseUrl,
    schema: settings.dbSchema,
    max: REPLICA_POOL,
    onConnectionError: (error) => logger.warn({ err: error }, 'read replica connection lost or refused; its reads go to the primary'),
  });
  return createReadRouting({
    primary,
    replica,
    maxStalenessSeconds: settings.readMaxStalenessSeconds,
    onChange: (state) =>
      state.usable
        ? logger.info({ stalenessSeconds: state.stalenessSeconds }, 'read replica caught up: stale reads go to it')
        : logger.warn({ reason: state.reason }, 'read replica not used: every read goes to the primary'),
  });
}
