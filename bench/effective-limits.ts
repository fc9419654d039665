// Reading effective limits for a page of tenants: loadEffectiveLimits (one query for the whole batch, then
// the cascade) against the obvious baseline of one query per tenant (resolveTenantLimit-style N+1), on the
// same read-model tables in the same run. PGlite in memory, or PostgreSQL when DATABASE_URL is set.
// Last line: JSON {bench, ours, baseline, ratio, unit, ...}.
import { loadEffectiveLimits } from '../src/control-plane/effectiveLimits.ts';
import type { Db } from '../src/db/db.ts';
import { migrate } from '../src/db/migrate.ts';
import { openPglite } from '../src/db/pglite.ts';
import { openPostgres, quoteIdent } from '../src/db/postgres.ts';

const TENANTS = 5_000;
const BATCH = 200;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (process.env.BENCH_QUICK === '1' ? 5 : 20));

async function openBenchDb(): Promise<{ db: Db; storage: string; dispose(): Promise<void> }> {
  const url = process.env.DATABASE_URL;
  if (!url) {
    const db = await openPglite();
    return { db, storage: 'pglite', dispose: () => db.close() };
  }
  const schema = `bench_${Date.now()}`;
  const admin = openPostgres({ connectionString: url, max: 1 });
  await admin.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
  const db = openPostgres({ connectionString: url, schema, max: 4 });
  return {
    db,
    storage: 'postgres',
    async dispose() {
      await db.close();
      await admin.query(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`);
      await admin.close();
    },
  };
}

const { db, storage, dispose } = await openBenchDb();
await migrate(db);
await db.exec(`
  INSERT INTO gl_platform_defaults VALUES ('INGEST', '{"ratePerSecond": 800, "burst": 1600}');
  INSERT INTO gl_tiers SELECT 'tier-' || i, 'Tier ' || i, NULL, now() FROM generate_series(0, 9) i;
  INSERT INTO gl_tier_limits SELECT 'tier-' || i, d, jsonb_build_object('ratePerSecond', 100 * (i + 1))
    FROM generate_series(0, 9) i, unnest(ARRAY['INGEST', 'EGRESS', 'AI_INFERENCE']) d;
  INSERT INTO gl_tenants (tenant_id, tier_id, registered_at) SELECT 't-' || i, 'tier-' || (i % 10), now() FROM generate_series(0, ${TENANTS - 1}) i;
  INSERT INTO gl_tenant_overrides SELECT 't-' || i, 'PROVISIONING', '{"ratePerSecond": 50}', NULL, 'bench', 'bench', now()
    FROM generate_series(0, ${TENANTS - 1}, 7) i;
`);

const batches = Array.from({ length: ROUNDS }, (_, round) => Array.from({ length: BATCH }, (_, i) => `t-${(round * BATCH + i * 13) % TENANTS}`));
const at = new Date();

async function timeIt(run: (ids: string[]) => Promise<number>): Promise<number> {
  await run(batches[0]!);
  const started = performance.now();
  let resolved = 0;
  for (const ids of batches) resolved += await run(ids);
  return resolved / ((performance.now() - started) / 1_000);
}

const ours = await timeIt(async (ids) => (await loadEffectiveLimits(db, ids, at)).size);
const baseline = await timeIt(async (ids) => {
  let found = 0;
  for (const id of ids) found += (await loadEffectiveLimits(db, [id], at)).size;
  return found;
});
await dispose();

console.log(
  JSON.stringify({
    bench: 'effective-limits-batch',
    ours: Math.round(ours),
    baseline: Math.round(baseline),
    ratio: Number((ours / baseline).toFixed(2)),
    unit: 'tenants resolved/s',
    baselineIs: 'what a user would write: one query per tenant (N+1) on the same read-model tables',
    generator: 'sequential calls from the bench process, unpinned',
    storage,
    batch: BATCH,
    tenants: TENANTS,
  }),
);
