// A fresh embedded database starts from a database made once, when the package is built (`npm run build`
// writes dist/pglite-seed.tar.gz with scripts/writePgliteSeed.ts), instead of running initdb in WebAssembly at
// every fresh start: on a busy 2-core machine initdb took 14 s of a 29 s fresh start. The seed is initdb's output
// with the migrations of the build applied: applying them at the first start cost about 2.5 s of CPU more, and
// the migrations of a later version still run on it as on any database. The seed's files are written into the
// data directory here, before PGlite opens it: PGlite's own loading of a tarball (loadDataDir) writes each file
// through its WebAssembly file system and cost about 1.5 s more of CPU. A seed written by another PGlite version
// is not used (initdb runs instead).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { Db } from './db.ts';
import { migrate } from './migrate.ts';
import { packagePath } from '../packageRoot.ts';

export const PGLITE_SEED_FILE = packagePath('dist', 'pglite-seed.tar.gz');
/** The PGlite version that wrote the seed, beside it. */
export const PGLITE_SEED_VERSION_FILE = packagePath('dist', 'pglite-seed.version');

/** Written last: PostgreSQL takes a directory holding it for a database, so a start cut short leaves none half-written. */
const DATABASE_MARK = 'PG_VERSION';
/** Beside a database planted from the seed until it has a ledger identity of its own (nameSeededLedger). */
const UNNAMED_MARK = 'governance-seed-unnamed';
const MIN_ZLIB_CHUNK = 64;

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

/** Whether a database in `dataDir` would start from the seed: a directory with no database yet, and a seed of this PGlite. */
export function pgliteSeedFor(dataDir: string): boolean {
  if (existsSync(path.join(dataDir, DATABASE_MARK))) return false;
  if (!existsSync(PGLITE_SEED_FILE) || !existsSync(PGLITE_SEED_VERSION_FILE)) return false;
  return readFileSync(PGLITE_SEED_VERSION_FILE, 'utf8').trim() === installedPgliteVersion();
}

/**
 * Writes the seed's database into `dataDir` when pgliteSeedFor says so. What a start cut short left there (no
 * database yet) is written over.
 */
export async function plantPgliteSeed(dataDir: string): Promise<void> {
  if (!pgliteSeedFor(dataDir)) return;
  const compressed = readFileSync(PGLITE_SEED_FILE);
  // Inflated into one buffer of the size gzip's trailer gives, which zlib hands over as it is: in chunks, it
  // copied the 40 MB once more to join them.
  const size = Math.max(compressed.readUInt32LE(compressed.length - 4), MIN_ZLIB_CHUNK);
  const entries = readTar(await promisify(gunzip)(compressed, { chunkSize: size }));
  const outside = entries.find((entry) => path.relative(dataDir, path.resolve(dataDir, entry.name)).startsWith('..'));
  if (outside) throw new Error(`the PGlite seed names a file outside its directory: ${outside.name}`);
  writeFileSync(path.join(dataDir, UNNAMED_MARK), '');
  for (const entry of entries) {
    if (entry.kind === 'directory') mkdirSync(path.join(dataDir, entry.name), { recursive: true, mode: entry.mode });
    else mkdirSync(path.dirname(path.join(dataDir, entry.name)), { recursive: true, mode: 0o700 });
  }
  // Written on the thread pool, while the service's modules load.
  const write = (entry: TarEntry) => writeFile(path.join(dataDir, entry.name), entry.data, { mode: entry.mode });
  const files = entries.filter((entry) => entry.kind === 'file');
  await Promise.all(files.filter((entry) => entry.name !== DATABASE_MARK).map(write));
  await Promise.all(files.filter((entry) => entry.name === DATABASE_MARK).map(write));
}

/** The ledger identity the seed is written with (0090_ledger_identity.sql makes one per database): none yet. */
export const SEED_LEDGER_IDENTITY = '00000000-0000-0000-0000-000000000000';

/**
 * A seed made from a fresh database `db` (a PGlite, whose dumpDataDir is `dump`): the migrations applied, the
 * ledger identity SEED_LEDGER_IDENTITY, and everything in the table files, so a database from it has no WAL to
 * replay. Resolves to the seed and the migrations applied.
 */
export async function makeSeed(db: Db, dump: () => Promise<Blob>): Promise<{ seed: Blob; applied: string[] }> {
  const applied = await migrate(db);
  await db.query('UPDATE gl_ledger_identity SET id = $1', [SEED_LEDGER_IDENTITY]);
  await db.exec('CHECKPOINT');
  return { seed: await dump(), applied };
}

/** A database made from a seed gets a ledger identity of its own. */
export async function nameLedgerFromSeed(db: Db): Promise<void> {
  await db.query('UPDATE gl_ledger_identity SET id = gen_random_uuid() WHERE id = $1', [SEED_LEDGER_IDENTITY]);
}

/**
 * The seed's migrations ran once, at the build: a database planted from it gets a ledger identity of its own
 * here, when it is first opened (or the next time, when a start stopped before). Nothing refers to the identity
 * before that.
 */
export async function nameSeededLedger(db: Db, dataDir: string): Promise<void> {
  const mark = path.join(dataDir, UNNAMED_MARK);
  if (!existsSync(mark)) return;
  await nameLedgerFromSeed(db);
  rmSync(mark);
}

interface TarEntry {
  /** Relative to the data directory. */
  name: string;
  kind: 'directory' | 'file';
  mode: number;
  data: Uint8Array;
}

/** The directories and regular files of a ustar archive (what PGlite's dumpDataDir writes). */
function readTar(archive: Buffer): TarEntry[] {
  const entries: TarEntry[] = [];
  const text = (header: Buffer, offset: number, length: number) => {
    const field = header.subarray(offset, offset + length);
    const end = field.indexOf(0);
    return field.subarray(0, end < 0 ? length : end).toString('utf8');
  };
  for (let offset = 0; offset + 512 <= archive.length; ) {
    const header = archive.subarray(offset, offset + 512);
    if (header[0] === 0) break;
    const prefix = text(header, 345, 155);
    const name = (prefix ? `${prefix}/${text(header, 0, 100)}` : text(header, 0, 100)).replace(/^\/+/, '').replace(/\/+$/, '');
    const size = Number.parseInt(text(header, 124, 12).trim() || '0', 8);
    const mode = Number.parseInt(text(header, 100, 8).trim() || '0', 8) & 0o777;
    const type = String.fromCharCode(header[156] ?? 0);
    offset += 512;
    if (name && type === '5') entries.push({ name, kind: 'directory', mode: mode || 0o700, data: new Uint8Array() });
    else if (name && (type === '0' || type === '\0')) entries.push({ name, kind: 'file', mode: mode || 0o600, data: archive.subarray(offset, offset + size) });
    offset += Math.ceil(size / 512) * 512;
  }
  return entries;
}
