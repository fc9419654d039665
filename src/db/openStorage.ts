import type { Logger } from '../logger.ts';
import type { Db } from './db.ts';
import { migrate } from './migrate.ts';
import { openDb, type StorageSettings } from './open.ts';

/**
 * The service's database, opened and migrated. A lost connection is survived (the work on it fails with
 * StorageUnavailable, answered 503 / SERVICE_UNAVAILABLE) and logged.
 */
export async function openStorage(settings: StorageSettings, logger: Logger): Promise<Db> {
  const db = await openDb(settings, {
    onConnectionError: (error) => logger.warn({ err: error }, 'database connection lost or refused; reconnecting on demand'),
  });
  const applied = await migrate(db);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  return db;
}
