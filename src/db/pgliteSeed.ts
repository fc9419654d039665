// A fresh embedded database starts from initdb's output made once, when the package is built (`npm run build`
// writes dist/pglite-initdb.tar.gz with scripts/writePgliteSeed.ts), instead of running initdb in WebAssembly at
// every fresh start: on a busy 2-core machine initdb took 14 s of a 29 s fresh start, and loading the seed 5 s.
// The seed holds initdb's output only: migrations run on it as on any new database, so each database still
// gets its own ledger identity. A seed written by another PGlite version is not used (initdb runs instead).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { packagePath } from '../packageRoot.ts';

export const PGLITE_SEED_FILE = packagePath('dist', 'pglite-initdb.tar.gz');
/** The PGlite version that wrote the seed, beside it. */
export const PGLITE_SEED_VERSION_FILE = packagePath('dist', 'pglite-initdb.version');

/** The installed PGlite's version (its package.json is not among the package's exports, so it is found from its entry). */
export function installedPgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  for (let dir = path.dirname(entry); path.dirname(dir) !== dir; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (!existsSync(manifest)) continue;
    const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
    if (parsed.name === '@electric-sql/pglite' && parsed.version) return parsed.version;
  }
  throw new Error(`no package.json of @electric-sql/pglite above ${entry}`);
}

/** The seed to create a database in `dataDir` from: only for a directory with no database yet, and a seed of this PGlite. */
export function pgliteSeedFor(dataDir: string): Blob | undefined {
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) return undefined;
  if (!existsSync(PGLITE_SEED_FILE) || !existsSync(PGLITE_SEED_VERSION_FILE)) return undefined;
  if (readFileSync(PGLITE_SEED_VERSION_FILE, 'utf8').trim() !== installedPgliteVersion()) return undefined;
  return new Blob([readFileSync(PGLITE_SEED_FILE)]);
}
