// A fresh embedded database starts from the build's seed (src/db/pgliteSeed.ts) when dist/ holds one: it opens,
// migrates, keeps its data across a reopen, and two databases made from the one seed are two ledgers (each is
// given an identity of its own at its first open). Skipped, saying so, where no seed was built.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate } from '../../../src/db/migrate.ts';
import { openDb } from '../../../src/db/open.ts';
import { PGLITE_SEED_FILE, pgliteSeedFor, SEED_LEDGER_IDENTITY } from '../../../src/db/pgliteSeed.ts';

const seeded = existsSync(PGLITE_SEED_FILE);
if (!seeded) console.warn('dist/ holds no PGlite seed (npm run build): the seed suite is skipped.');

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function freshDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'gl-seed-'));
  dirs.push(dir);
  return dir;
}

async function ledgerIdentity(dataDir: string): Promise<string> {
  const db = await openDb({ dataDir });
  try {
    await migrate(db);
    const { rows } = await db.query<{ id: string }>('SELECT id::text AS id FROM gl_ledger_identity');
    return rows[0]!.id;
  } finally {
    await db.close();
  }
}

describe.skipIf(!seeded)('a fresh embedded database from the build seed', () => {
  it('opens, migrates and keeps its data across a reopen; two are two ledgers', async () => {
    const first = await freshDir();
    expect(pgliteSeedFor(first)).toBe(true);
    const identity = await ledgerIdentity(first);
    expect(identity).not.toBe(SEED_LEDGER_IDENTITY);
    // Reopened: a database is there, so the seed is not used again, and the identity is the one it had.
    expect(pgliteSeedFor(first)).toBe(false);
    expect(await ledgerIdentity(first)).toBe(identity);
    expect(await ledgerIdentity(await freshDir())).not.toBe(identity);
  }, 120_000);
});
