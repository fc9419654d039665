// The storage modes an end-to-end suite starts the whole service in: embedded PGlite always, PostgreSQL
// (in a schema of its own, created before and dropped after) when DATABASE_URL is set.
import { randomBytes } from 'node:crypto';
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
