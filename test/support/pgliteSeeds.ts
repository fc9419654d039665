// A test's in-memory PGlite starts from a migrated database made once, not from initdb and the migrations:
// PGlite runs initdb in WebAssembly at every create without a database to load, and with the migrations after it
// that took about 3.9 s of CPU per test database (10 s of wall time on a busy 2-core machine) where loading the
// seed takes about 0.9 s. The seed is made by the first test process that needs it (its database as the build's
// seed is made: src/db/pgliteSeed.ts makeSeed) and kept in the system's temporary directory for the processes
// after it, each test file running in a process of its own. Its name carries a hash of the installed PGlite's
// version and of every migration's name and text, so a changed migration makes a new seed. While one process
// makes it, the others open their databases as before rather than wait or make it too. A database from the
// seed gets a ledger identity of its own, as a service's database from the build's seed does.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Db } from '../../src/db/db.ts';
import { isAlive } from '../../src/db/dataDirLock.ts';
import { loadMigrations, migrate } from '../../src/db/migrate.ts';
import { createPglite, openPglite, pgliteDb } from '../../src/db/pglite.ts';
import { installedPgliteVersion, makeSeed, nameLedgerFromSeed } from '../../src/db/pgliteSeed.ts';

let seed: Blob | undefined;

/** A new in-memory PGlite: migrated (from the seed), or as initdb left it (`migrate: false`). */
export async function openTestPglite(options: { migrate: boolean }): Promise<Db> {
  if (!options.migrate) return openPglite();
  seed ??= await readOrMakeSeed();
  if (!seed) {
    const db = await openPglite();
    await migrate(db);
    return db;
  }
  const db = pgliteDb(await createPglite(undefined, seed));
  await nameLedgerFromSeed(db);
  return db;
}

/** The seed, made here when no other process is making it; undefined while one is. */
async function readOrMakeSeed(): Promise<Blob | undefined> {
  const hash = createHash('sha256').update(installedPgliteVersion());
  for (const migration of await loadMigrations()) hash.update(`\0${migration.name}\0${migration.sql}`);
  const file = path.join(tmpdir(), `governance-test-pglite-${hash.digest('hex').slice(0, 16)}.tar`);
  // Uncompressed: a gzipped seed would be inflated again in every test process.
  const blob = (bytes: Uint8Array<ArrayBuffer>) => new Blob([bytes], { type: 'application/x-tar' });
  if (existsSync(file)) return blob(readFileSync(file) as Uint8Array<ArrayBuffer>);
  const lock = `${file}.lock`;
  if (!takeLock(lock)) return undefined;
  try {
    const pglite = await createPglite();
    const db = pgliteDb(pglite);
    const { seed: made } = await makeSeed(db, () => pglite.dumpDataDir('none'));
    await db.close();
    const bytes = new Uint8Array(await made.arrayBuffer());
    // Written aside and renamed: a process reading the seed never finds it half-written.
    writeFileSync(`${file}.${process.pid}.part`, bytes);
    renameSync(`${file}.${process.pid}.part`, file);
    return blob(bytes);
  } finally {
    rmSync(lock, { force: true });
  }
}

/**
 * Creates `lock` holding this process's id. One whose process has ended, or (still empty) older than a minute,
 * is taken over.
 */
function takeLock(lock: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      return true;
    } catch {
      let holder: number;
      try {
        holder = Number(readFileSync(lock, 'utf8')) || (Date.now() - statSync(lock).mtimeMs < 60_000 ? -1 : 0);
      } catch {
        continue; // gone meanwhile: try again
      }
      if (holder === -1 || (holder > 0 && isAlive(holder))) return false;
      rmSync(lock, { force: true });
    }
  }
  return false;
}

