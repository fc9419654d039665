// Writes the seed a fresh embedded database starts from (src/db/pgliteSeed.ts): initdb's output from the
// installed PGlite, as a gzipped tar in dist/, and the PGlite version beside it. `npm run build` runs it.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { installedPgliteVersion, PGLITE_SEED_FILE, PGLITE_SEED_VERSION_FILE } from '../src/db/pgliteSeed.ts';

const db = await PGlite.create();
const seed = await db.dumpDataDir('gzip');
await db.close();
mkdirSync(path.dirname(PGLITE_SEED_FILE), { recursive: true });
writeFileSync(PGLITE_SEED_FILE, Buffer.from(await seed.arrayBuffer()));
writeFileSync(PGLITE_SEED_VERSION_FILE, `${installedPgliteVersion()}\n`);
console.log(`wrote ${path.relative(process.cwd(), PGLITE_SEED_FILE)} (${seed.size} bytes)`);
