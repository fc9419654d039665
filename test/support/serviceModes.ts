// The storage modes an end-to-end suite starts the whole service in: embedded PGlite always, PostgreSQL
// (in a schema of its own, created before and dropped after) when DATABASE_URL is set.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { describe } from 'vitest';
import { readSettings } from '../../src/config.ts';
import { createServer, listen } from '../../src/http-server/server.ts';
import { startService, type Service } from '../../src/service.ts';
import { openPostgres, quoteIdent } from '../../src/db/postgres.ts';
import { databaseUrl } from './databases.ts';

export interface ServiceMode {
  name: string;
  /** The environment the service reads its settings from in this mode. */
  env: Record<string, string>;
  /** Creates the mode's database schema, if it has one. */
  prepare(): Promise<void>;
  /** Drops what prepare created. */
  dispose(): Promise<void>;
}

export function serviceModes(schemaPrefix: string): ServiceMode[] {
  const embedded: ServiceMode = { name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} };
  if (!databaseUrl) return [embedded];
  const schema = `${schemaPrefix}_${randomBytes(6).toString('hex')}`;
  const inSchema = async (sql: string) => {
    const admin = openPostgres({ connectionString: databaseUrl!, max: 1 });
    try {
      await admin.query(sql);
    } finally {
      await admin.close();
    }
  };
  return [
    embedded,
    {
      name: 'PostgreSQL',
      env: { DATABASE_URL: databaseUrl, GOVERNANCE_DB_SCHEMA: schema },
      prepare: () => inSchema(`CREATE SCHEMA ${quoteIdent(schema)}`),
      dispose: () => inSchema(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`),
    },
  ];
}

/**
 * describe.each(modes) over serviceModes(schemaPrefix), except that without DATABASE_URL the PostgreSQL suite
 * is registered too, as skipped, so the closing line counts its tests instead of the suite registering
 * nothing. `$name` in `name` is the mode's name; `body` gets the mode and the list of modes run.
 */
export function describeOnEachServiceMode(schemaPrefix: string, name: string, body: (mode: ServiceMode, modes: readonly ServiceMode[]) => void): void {
  const modes = serviceModes(schemaPrefix);
  const unreachable: ServiceMode = {
    name: 'PostgreSQL',
    env: {},
    prepare: () => Promise.reject(new Error('DATABASE_URL is not set: a suite on PostgreSQL must be skipped')),
    dispose: async () => {},
  };
  const registered = databaseUrl ? modes.map((mode) => ({ mode, skip: false })) : [...modes.map((mode) => ({ mode, skip: false })), { mode: unreachable, skip: true }];
  for (const { mode, skip } of registered) describe.skipIf(skip)(name.replaceAll('$name', mode.name), () => body(mode, modes));
}

export interface RunningService {
  service: Service;
  /** http://127.0.0.1:<port> of the listening server. */
  baseUrl: string;
  dataDir: string;
  /** Closes the listener and the service, and removes what the mode and the data directory held. */
  stop(): Promise<void>;
}

/** Starts the whole service in `mode` on a fresh data directory, listening on a free port. */
export async function startServiceIn(mode: ServiceMode): Promise<RunningService> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'gl-e2e-'));
  await mode.prepare();
  const service = await startService(readSettings({ GOVERNANCE_DATA_DIR: dataDir, ...mode.env }), pino({ level: 'silent' }));
  const server = createServer(service, service.routes);
  const baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
  return {
    service,
    baseUrl,
    dataDir,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await service.close();
      await mode.dispose();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
