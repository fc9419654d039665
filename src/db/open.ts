import type { Db } from './db.ts';
import { openPostgres } from './postgres.ts';
import { openPglite } from './pglite.ts';

export interface StorageSettings {
  databaseUrl?: string;
  dbSchema?: string;
  dataDir: string;
}

/** DATABASE_URL wins; otherwise embedded PGlite in the data directory. */
export async function openDb(settings: StorageSettings): Promise<Db> {
  if (settings.databaseUrl) return openPostgres({ connectionString: settings.databaseUrl, schema: settings.dbSchema });
  return openPglite(settings.dataDir);
}
