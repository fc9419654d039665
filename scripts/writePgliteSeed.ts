// Writes the seed a fresh embedded database starts from (src/db/pgliteSeed.ts): initdb's output from the
// installed PGlite with the migrations applied, as a gzipped tar in dist/, and the PGlite version beside it.
// `npm run build` runs it.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createPglite, pgliteDb } from '../src/db/pglite.ts';
import { installedPgliteVersion, makeSeed, PGLITE_SEED_FILE, PGLITE_SEED_VERSION_FILE } from '../src/db/pgliteSeed.ts';

const pglite = await createPglite();
const db = pgliteDb(pglite);
// Each database from the seed names its own ledger at its first open (nameSeededLedger).
const { seed, applied } = await makeSeed(db, () => pglite.dumpDataDir('gzip'));
await db.close();
mkdirSync(path.dirname(PGLITE_SEED_FILE), { recursive: true });
writeFileSync(PGLITE_SEED_FILE, Buffer.from(await seed.arrayBuffer()));
writeFileSync(PGLITE_SEED_VERSION_FILE, `${installedPgliteVersion()}\n`);
console.log(`wrote ${path.relative(process.cwd(), PGLITE_SEED_FILE)} (${seed.size} bytes, ${applied.length} migrations applied)`);
