// Trend reads on PostgreSQL with a realistic retained volume for 1,000 tenants: a year of DAY rows, 90 days
// of HOUR rows and 7 days of MINUTE rows (what retention keeps; a year of minutes would be 525M rows that
// pruning never lets exist). Minute rows are generated time-major, as traffic arrives, so one tenant's day
// is spread over the heap the way it is in production. The data is loaded once into the schema
// bench_trends with SQL generate_series and reused by later runs.
//
// The first run loads for several minutes (10M minute rows on two cores); later runs take ~30 s.
//
// ours: shedTrend(MINUTE) over one day for a random tenant (the primary key's range scan).
// baseline: what a user would write without the trend tables: a date_trunc('minute') GROUP BY over the raw
//   admission summaries, one row per tenant, key and second as the Recorder makes them, kept in a flat table
//   indexed on (tenant, dimension, second) (the kindest form of the raw summaries: in the ledger they sit in
//   AdmissionsRecorded events, as JSON). One day of them for RAW_TENANTS tenants (86,400 rows a tenant),
//   loaded once and reused like the rest; the query is asked for the same kind of day as ours.
// indexScansOff: the figure this bench used to call its baseline (shedTrend with index scans turned off).
// BENCH_QUICK=1: fewer samples.
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { openPostgres } from '../src/db/postgres.ts';
import { migrate } from '../src/db/migrate.ts';
import type { Db } from '../src/db/db.ts';
import { shedTrend } from '../src/metrics/trends/shedTrend.ts';
import { topShedders } from '../src/metrics/trends/topShedders.ts';

const URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SCHEMA = 'bench_trends';
const TENANTS = 1_000;
const DAY_MS = 86_400_000;
// Fixed "now" so reruns reuse the same data: 2026-11-29 00:00 UTC.
const NOW_SECOND = Date.UTC(2026, 10, 29) / 1000;
const VOLUME = { days: 365, hourDays: 90, minuteDays: 7, keysPerTenant: 1 };
/** Tenants with a day of raw per-second summaries (the baseline's table). */
const RAW_TENANTS = 50;
/** The day the raw summaries cover: the last whole day before NOW_SECOND. */
const RAW_DAY_SECOND = NOW_SECOND - 86_400;
const QUICK = process.env.BENCH_QUICK === '1';

const tenant = (i: number) => `tenant-${String(i).padStart(4, '0')}`;

async function load(db: Db): Promise<{ reused: boolean; loadSeconds: number; rows: Record<string, number> }> {
  const started = performance.now();
  await db.exec('CREATE TABLE IF NOT EXISTS bench_loaded (volume text PRIMARY KEY)');
  const marker = JSON.stringify({ TENANTS, NOW_SECOND, ...VOLUME });
  const loaded = await db.query('SELECT 1 FROM bench_loaded WHERE volume = $1', [marker]);
  if (loaded.rowCount === 0) {
    console.error('loading trend tables (once; later runs reuse them) ...');
    await db.exec('TRUNCATE gl_admission_trends_minute, gl_admission_trends_hour, gl_admission_trends_day, bench_loaded');
    // Counts vary by tenant and time; about one bucket in eight sheds.
    const rows = (table: string, step: string, from: number, to: number) => `
      INSERT INTO ${table}
      SELECT 'tenant-' || lpad(t::text, 4, '0'), 'INGEST', b, 'LIVE',
             a, a / 50, s, s / 50, 0, 0, CASE WHEN s > 0 THEN 1 ELSE 0 END
        FROM generate_series(to_timestamp(${from}), to_timestamp(${to}) - interval '${step}', interval '${step}') AS b
        CROSS JOIN LATERAL generate_series(1, ${TENANTS}) AS t
        CROSS JOIN LATERAL (SELECT (t * 7919 + extract(epoch FROM b)::bigint / 60) % 1000 AS a) AS admitted
        CROSS JOIN LATERAL (SELECT CASE WHEN a % 8 = 0 THEN a / 4 ELSE 0 END AS s) AS shed`;
    for (const [table, step, days] of [
      ['gl_admission_trends_day', '1 day', VOLUME.days],
      ['gl_admission_trends_hour', '1 hour', VOLUME.hourDays],
      ['gl_admission_trends_minute', '1 minute', VOLUME.minuteDays],
    ] as const) {
      // Indexes are rebuilt after the bulk insert (faster than maintaining them row by row), from the
      // definitions the migrations gave them.
      const key = await db.query<{ def: string }>(
        `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`,
        [table],
      );
      const indexes = await db.query<{ indexname: string; indexdef: string }>(
        `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 AND indexname <> $2`,
        [table, `${table}_pkey`],
      );
      await db.exec(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_pkey`);
      for (const { indexname } of indexes.rows) await db.exec(`DROP INDEX ${indexname}`);
      await db.exec(rows(table, step, NOW_SECOND - days * 86_400, NOW_SECOND));
      await db.exec(`ALTER TABLE ${table} ADD CONSTRAINT ${table}_pkey ${key.rows[0]!.def}`);
      for (const { indexdef } of indexes.rows) await db.exec(indexdef);
    }
    await db.query('INSERT INTO bench_loaded (volume) VALUES ($1)', [marker]);
  }
  // The generated hours and days hold every generated minute: all of them are rolled up (upsertRollups).
  await db.query(
    `INSERT INTO gl_admission_trends_rolled (rolled_through) VALUES ($1) ON CONFLICT (singleton) DO UPDATE SET rolled_through = EXCLUDED.rolled_through`,
    [NOW_SECOND],
  );
  // What autovacuum does to these insert-mostly tables in production: statistics and the visibility map
  // (index-only scans need it). Quick once done: it skips pages already all-visible.
  await db.exec('VACUUM (ANALYZE) gl_admission_trends_minute, gl_admission_trends_hour, gl_admission_trends_day');
  const counts: Record<string, number> = {};
  for (const table of ['gl_admission_trends_minute', 'gl_admission_trends_hour', 'gl_admission_trends_day']) {
    const result = await db.query<{ n: number }>(`SELECT count(*)::float8 AS n FROM ${table}`);
    counts[table] = result.rows[0]!.n;
  }
  return { reused: loaded.rowCount > 0, loadSeconds: (performance.now() - started) / 1000, rows: counts };
}

/** The baseline's table: a day of raw per-second summaries for RAW_TENANTS tenants, time-major, indexed as a user would. */
async function loadRawSummaries(db: Db): Promise<number> {
  const marker = JSON.stringify({ raw: true, RAW_TENANTS, RAW_DAY_SECOND });
  await db.exec('CREATE TABLE IF NOT EXISTS bench_loaded (volume text PRIMARY KEY)');
  const loaded = await db.query('SELECT 1 FROM bench_loaded WHERE volume = $1', [marker]);
  if (loaded.rowCount === 0) {
    console.error('loading raw admission summaries (once; later runs reuse them) ...');
    await db.exec(`
      DROP TABLE IF EXISTS bench_raw_admission_summaries;
      CREATE TABLE bench_raw_admission_summaries (
        tenant_id text NOT NULL, dimension text NOT NULL, allowance text, at timestamptz NOT NULL,
        admitted_units bigint NOT NULL, admitted_messages bigint NOT NULL, shed_units bigint NOT NULL, shed_messages bigint NOT NULL,
        rejected_units bigint NOT NULL, rejected_messages bigint NOT NULL, hit_seconds integer NOT NULL);
      INSERT INTO bench_raw_admission_summaries
      SELECT 'tenant-' || lpad(t::text, 4, '0'), 'INGEST', 'LIVE', to_timestamp(${RAW_DAY_SECOND} + sec),
             a, a / 50, s, s / 50, 0, 0, CASE WHEN s > 0 THEN 1 ELSE 0 END
        FROM generate_series(0, 86399) AS sec
        CROSS JOIN LATERAL generate_series(1, ${RAW_TENANTS}) AS t
        CROSS JOIN LATERAL (SELECT (t * 7919 + sec) % 17 AS a) AS admitted
        CROSS JOIN LATERAL (SELECT CASE WHEN (t + sec / 60) % 8 = 0 THEN a / 4 ELSE 0 END AS s) AS shed;
      CREATE INDEX ON bench_raw_admission_summaries (tenant_id, dimension, at);`);
    await db.query('INSERT INTO bench_loaded (volume) VALUES ($1)', [marker]);
  }
  await db.exec('VACUUM (ANALYZE) bench_raw_admission_summaries');
  const result = await db.query<{ n: number }>('SELECT count(*)::float8 AS n FROM bench_raw_admission_summaries');
  return result.rows[0]!.n;
}

/** The user's query: shed and admitted per minute of one tenant's day, from the raw summaries. */
const RAW_MINUTES_SQL = `
  SELECT date_trunc('minute', at) AS bucket, sum(admitted_units) AS admitted_units, sum(admitted_messages) AS admitted_messages,
         sum(shed_units) AS shed_units, sum(shed_messages) AS shed_messages, sum(rejected_units) AS rejected_units,
         sum(rejected_messages) AS rejected_messages, sum(hit_seconds) AS hit_seconds
    FROM bench_raw_admission_summaries
   WHERE tenant_id = $1 AND dimension = $2 AND at >= $3 AND at < $4
   GROUP BY 1 ORDER BY 1`;

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

async function timeIt(runs: number, once: (i: number) => Promise<unknown>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await once(i);
    samples.push(performance.now() - started);
  }
  return samples;
}

async function main() {
  const admin = openPostgres({ connectionString: URL, max: 1 });
  await admin.exec(`CREATE SCHEMA IF NOT EXISTS ${SCHEMA}`);
  await admin.close();
  const db = openPostgres({ connectionString: URL, schema: SCHEMA, max: 2 });
  try {
    await migrate(db);
    const volume = await load(db);

    // A random tenant and a random day within the minute retention, for each run.
    let seed = 42;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const dayQuery = () => {
      const from = new Date((NOW_SECOND - 7 * 86_400) * 1000 + Math.floor(random() * 6 * DAY_MS));
      return { tenantId: tenant(1 + Math.floor(random() * TENANTS)), dimension: 'INGEST' as const, from, to: new Date(from.getTime() + DAY_MS), bucket: 'MINUTE' as const };
    };

    const rawRows = await loadRawSummaries(db);
    // The raw table's day, for a random one of its tenants: the user's query and ours ask for the same span.
    const rawDayQuery = () => {
      const from = new Date(RAW_DAY_SECOND * 1000);
      return { tenantId: tenant(1 + Math.floor(random() * RAW_TENANTS)), dimension: 'INGEST' as const, from, to: new Date(from.getTime() + DAY_MS), bucket: 'MINUTE' as const };
    };
    const runs = QUICK ? 10 : 50;
    await timeIt(5, () => shedTrend(db, dayQuery()));
    // Ours and the user's query alternate, run by run, on the same tenants and day.
    const ours: number[] = [];
    const baseline: number[] = [];
    let rawPoints = 0;
    for (let i = 0; i < runs + 3; i++) {
      const query = rawDayQuery();
      const [oursMs] = await timeIt(1, () => shedTrend(db, query));
      const [baselineMs] = await timeIt(1, async () => {
        rawPoints = (await db.query(RAW_MINUTES_SQL, [query.tenantId, query.dimension, query.from, query.to])).rowCount ?? 0;
      });
      // The first three of each warm the plans and caches.
      if (i >= 3) {
        ours.push(oursMs!);
        baseline.push(baselineMs!);
      }
    }
    const points = (await shedTrend(db, dayQuery())).length;

    const indexScansOff = await timeIt(QUICK ? 1 : 3, () =>
      db.transaction(async (tx) => {
        await tx.exec('SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_indexonlyscan = off');
        return shedTrend(tx, dayQuery());
      }),
    );

    const yearOfDays = await timeIt(20, () =>
      shedTrend(db, { tenantId: tenant(1 + Math.floor(random() * TENANTS)), dimension: 'INGEST', from: new Date((NOW_SECOND - 365 * 86_400) * 1000), to: new Date(NOW_SECOND * 1000), bucket: 'DAY' }),
    );
    const quarterOfHours = await timeIt(20, () =>
      shedTrend(db, { tenantId: tenant(1 + Math.floor(random() * TENANTS)), dimension: 'INGEST', from: new Date((NOW_SECOND - 90 * 86_400) * 1000), to: new Date(NOW_SECOND * 1000), bucket: 'HOUR' }),
    );
    const topYear = await timeIt(3, () =>
      topShedders(db, { from: new Date((NOW_SECOND - 365 * 86_400 + 1_800) * 1000), to: new Date((NOW_SECOND - 1_800) * 1000), first: 10 }),
    );

    const oursMedian = percentile(ours, 0.5);
    const baselineMedian = percentile(baseline, 0.5);
    console.log(
      JSON.stringify({
        bench: 'trends',
        ours: round(oursMedian),
        baseline: round(baselineMedian),
        ratio: round(baselineMedian / oursMedian),
        unit: 'ms (median, shedTrend MINUTE over one day for one tenant)',
        oursP95: round(percentile(ours, 0.95)),
        baselineP95: round(percentile(baseline, 0.95)),
        pointsPerAnswer: points,
        baselinePointsPerAnswer: rawPoints,
        baselineIs: "what a user would write: a date_trunc('minute') GROUP BY over the raw per-second admission summaries in a flat table indexed on (tenant, dimension, second)",
        generator: 'sequential queries from the bench process (node-postgres, 2 connections), PostgreSQL shared, unpinned',
        rawSummaryRows: rawRows,
        indexScansOffMedianMs: round(percentile(indexScansOff, 0.5)),
        dayBucketsOverAYearMedianMs: round(percentile(yearOfDays, 0.5)),
        hourBucketsOver90DaysMedianMs: round(percentile(quarterOfHours, 0.5)),
        topSheddersOverAYearMedianMs: round(percentile(topYear, 0.5)),
        loaded: { tenants: TENANTS, ...VOLUME, rows: volume.rows, note: 'retained volume: a year of days, 90 days of hours, 7 days of minutes; one dimension/allowance key per tenant' },
        dataReused: volume.reused,
        loadSeconds: round(volume.loadSeconds),
        database: 'postgresql',
        machineLoadAverage: round(loadavg()[0]!),
        quick: QUICK,
      }),
    );
  } finally {
    await db.close();
  }
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

await main();
