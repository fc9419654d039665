import type { Db } from './db.ts';
import { openPostgres } from './postgres.ts';
import { lockDataDir } from './dataDirLock.ts';
import { mkdir } from 'node:fs/promises';

export interface StorageSettings {
  databaseUrl?: string;
  dbSchema?: string;
  dataDir: string;
}

export interface OpenDbOptions {
  /** PostgreSQL: told of every connection the server dropped or refused. */
  onConnectionError?: (error: unknown) => void;
}

/** DATABASE_URL wins; otherwise embedded PGlite in the data directory. */
export async function openDb(settings: StorageSettings, options: OpenDbOptions = {}): Promise<Db> {
  if (settings.databaseUrl) {
    return openPostgres({ connectionString: settings.databaseUrl, schema: settings.dbSchema, onConnectionError: options.onConnectionError });
  }
  await mkdir(settings.dataDir, { recursive: true });
  const unlock = await lockDataDir(settings.dataDir);
  try {
    // Loaded here: a service on PostgreSQL never needs the embedded database's library.
    const { openPglite } = await import('./pglite.ts');
    const db = await openPglite(settings.dataDir);
    return {
      ...db,
      async close() {
        try {
          await db.close();
        } finally {
          await unlock();
        }
      },
    };
  } catch (error) {
    await unlock();
    throw error;
  }
}
