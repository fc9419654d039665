// Writes the seed a fresh embedded database starts from (src/db/pgliteSeed.ts): initdb's output from the
// installed PGlite with the migrations applied, as a gzipped tar in dist/, and the PGlite version beside it.
// `npm run build` runs it.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { migrate } from '../src/db/migrate.ts';
import { createPglite, pgliteDb } from '../src/db/pglite.ts';
import { installedPgliteVersion, PGLITE_SEED_FILE, PGLITE_SEED_VERSION_FILE, SEED_LEDGER_IDENTITY } from '../src/db/pgliteSeed.ts';

const pglite = await createPglite();
const db = pgliteDb(pglite);
const applied = await migrate(db);
// Each database from the seed names its own ledger at its first open (nameSeededLedger).
await db.query('UPDATE gl_ledger_identity SET id = $1', [SEED_LEDGER_IDENTITY]);
// Everything in the table files, so a database from the seed has no WAL to replay.
await db.exec('CHECKPOINT');
const seed = await pglite.dumpDataDir('gzip');
await db.close();
mkdirSync(path.dirname(PGLITE_SEED_FILE), { recursive: true });
writeFileSync(PGLITE_SEED_FILE, Buffer.from(await seed.arrayBuffer()));
writeFileSync(PGLITE_SEED_VERSION_FILE, `${installedPgliteVersion()}\n`);
console.log(`wrote ${path.relative(process.cwd(), PGLITE_SEED_FILE)} (${seed.size} bytes, ${applied.length} migrations applied)`);
