// The composition root: opens storage, builds every part, and hands the server its routes. Each part lives
// in its own folder; this file only wires them.
import { mkdir } from 'node:fs/promises';
import type { Settings } from './config.ts';
import type { Db } from './db/db.ts';
import { openDb } from './db/open.ts';
import { migrate } from './db/migrate.ts';
import { createLogger, type Logger } from './logger.ts';
import type { ReadinessCheck } from './http/health.ts';
import type { Route } from './server.ts';

export interface Service {
  settings: Settings;
  logger: Logger;
  db: Db;
  readiness: ReadinessCheck[];
  routes: Route[];
  close(): Promise<void>;
}

export async function startService(settings: Settings, logger: Logger = createLogger(settings.logLevel)): Promise<Service> {
  if (!settings.databaseUrl) await mkdir(settings.dataDir, { recursive: true });
  const db = await openDb(settings);
  const applied = await migrate(db);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');

  const closers: Array<() => Promise<void>> = [];
  const readiness: ReadinessCheck[] = [
    async () => {
      await db.query('SELECT 1');
      return null;
    },
  ];
  const routes: Route[] = [];

  return {
    settings,
    logger,
    db,
    readiness,
    routes,
    async close() {
      for (const close of closers.reverse()) await close().catch((error: unknown) => logger.warn({ err: error }, 'close failed'));
      await db.close();
    },
  };
}
