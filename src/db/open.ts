import type { Db } from './db.ts';
import { openPostgres } from './postgres.ts';
import { openPglite } from './pglite.ts';
import { lockDataDir } from './dataDirLock.ts';
import { mkdir } from 'node:fs/promises';

export interface StorageSettings {
  databaseUrl?: string;
  dbSchema?: string;
  dataDir: string;
}

/** DATABASE_URL wins; otherwise embedded PGlite in the data directory. */
export async function openDb(settings: StorageSettings): Promise<Db> {
  if (settings.databaseUrl) return openPostgres({ connectionString: settings.databaseUrl, schema: settings.dbSchema });
  await mkdir(settings.dataDir, { recursive: true });
  const unlock = await lockDataDir(settings.dataDir);
  try {
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
