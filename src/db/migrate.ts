import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from './db.ts';
import { packagePath } from '../packageRoot.ts';

export const MIGRATIONS_DIR = packagePath('migrations');

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Reads `NNNN_name.sql` files in version order. */
export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((file) => /^\d+_.+\.sql$/.test(file));
  const migrations = await Promise.all(
    files.map(async (file) => ({
      version: Number.parseInt(file, 10),
      name: file.replace(/\.sql$/, ''),
      sql: await readFile(path.join(dir, file), 'utf8'),
    })),
  );
  migrations.sort((a, b) => a.version - b.version);
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i]!.version === migrations[i - 1]!.version) {
      throw new Error(`two migrations share version ${migrations[i]!.version}`);
    }
  }
  return migrations;
}

/**
 * Applies every migration not yet recorded, each in its own transaction, in order. The transaction-scoped
 * advisory lock makes a second process that starts at the same moment wait, then find the migration
 * recorded and skip it, instead of applying it twice.
 */
export async function migrate(db: Db, dir = MIGRATIONS_DIR): Promise<string[]> {
  const migrations = await loadMigrations(dir);
  await db.query(
    `CREATE TABLE IF NOT EXISTS gl_migrations (
       version integer PRIMARY KEY,
       name text NOT NULL,
       applied_at timestamptz NOT NULL DEFAULT now())`,
  ).catch(async (error: unknown) => {
    // Two processes racing on CREATE TABLE IF NOT EXISTS can collide on the catalog's unique index.
    if (!(await tableExists(db, 'gl_migrations'))) throw error;
  });
  // Read first, without a lock: a database already migrated (every start but its first) needs no transaction
  // per migration. One not recorded here is checked again under the lock, which a racing process may hold.
  const recorded = await db.query<{ version: number }>('SELECT version FROM gl_migrations');
  const alreadyApplied = new Set(recorded.rows.map((row) => Number(row.version)));
  const applied: string[] = [];
  for (const migration of migrations) {
    if (alreadyApplied.has(migration.version)) continue;
    const didApply = await db.transaction(async (tx) => {
      // Keyed by schema: processes migrating the same schema queue, while separate schemas on one server
      // (isolated test schemas, several ledgers in one database) do not wait for each other. Run as a script, so
      // it waits as long as another process's migration takes (a query's 30 s timeout would end the start-up).
      await tx.exec("SELECT pg_advisory_xact_lock(hashtext('governance-ledger migrations'), hashtext(current_schema()))");
      const done = await tx.query('SELECT 1 FROM gl_migrations WHERE version = $1', [migration.version]);
      if (done.rowCount > 0) return false;
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO gl_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      return true;
    });
    if (didApply) applied.push(migration.name);
  }
  return applied;
}

async function tableExists(db: Db, table: string): Promise<boolean> {
  const result = await db.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [table]);
  return result.rows[0]?.found != null;
}
