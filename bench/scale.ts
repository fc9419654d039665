// Real-time capacity through the door: N active tenants, each admitted and shed every second, the traffic sent
// over HTTP to the admission API (POST /v1/admissions, 100 items a request: per tenant 3 units then 10 against
// a ceiling of 5 a second) by a load process of its own, pinned with taskset to core 1 (a paced Node client:
// wrk cannot send a fixed number of requests a second), for BENCH_SCALE_SECONDS (default 20) at each N of
// BENCH_SCALE_TENANTS (default 10000,20000,50000), each server on a fresh schema, in a process of its own.
//
// ours:     the admission routes -> Governor -> ledger Recorder (summary references) -> PostgreSQL ledger ->
//           admission-trends projection in its worker thread, /readyz with the projections' readiness check at
//           the run's own 5 s bound, as the service assembles them.
// baseline: the bare minimum doing the same durable work: node:http reading the same batches, a fixed window per
//           tenant in a Map, and each second the closed second's summaries appended with one unnest INSERT to a
//           plain table and the trend minute rows upserted by a hand-written statement; /readyz 200 while the
//           trend rows are at most 5 s behind.
// The two alternate: at each N the one that ran second runs first at the next.
//
// Per N and side: flush p50/p99 (ours: the Recorder's record(); baseline: its INSERT and upsert), the longest
// event-loop stall (monitorEventLoopDelay), windows merged (a summary spanning more than a second), /readyz asked
// over HTTP every second (answers other than 200), the trend lag at the end, summaries per second (active
// tenants seen), the server's and PostgreSQL's cores, ledgerGbPerDay (bytes on disk, table + indexes + TOAST,
// of the ledger's summary partitions grown over the measured window, per summary, at N summaries a second for a
// day, plus what the warm-up wrote (our hour's key sources) 24 times), and catchUpTimesRealTime (the run's summaries replayed into emptied trend
// tables, in multiples of N a second). Held: no window merged, flush p99 < 500 ms, no stall > 50 ms, /readyz 200
// throughout, lag <= 5 s, and at least 95% of N summaries a second.
//
// Last line: JSON, `ours` and `baseline` the largest N held, with the host's start-time figure (bench/start-time.ts:
// the compiled service's start on PostgreSQL, when `dist/` is built) so readers can tell hosts apart.
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer as createBareServer, request as httpRequest, Agent } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { admissionTrendsProjection } from '../projections/admissionTrends.ts';
import { projectionWorkers } from '../projections/workerProjections.ts';
import { mintToken } from '../src/auth/token.ts';
import { createTokenVerifier } from '../src/auth/verifyToken.ts';
import type { Db } from '../src/db/db.ts';
import { createAdmissionRoutes } from '../src/doors/admissions/admissionRoutes.ts';
import { createServiceCallers } from '../src/doors/admissions/serviceCallers.ts';
import { Governor } from '../src/governance/index.ts';
import type { AdmissionSummary, LimitSource, Recorder, TenantGovernanceRecord, UnresolvedAdmissionSummary } from '../src/governance/index.ts';
import { createServer, listen } from '../src/http-server/server.ts';
import { createLedgerRecorder } from '../src/ledger/ledgerRecorder.ts';
import { projectionReadiness } from '../src/ledger/projectionReadiness.ts';
import { startProjections } from '../src/ledger/projectionSet.ts';
import { rebuildProjection } from '../src/ledger/rebuild.ts';
import { processCpuMicros } from '../test/support/replicas.ts';
import { pinToCore } from './support/benchServer.ts';
import { withBenchLedger, withBenchSchema } from './support/benchSchema.ts';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SECONDS = Number(process.env.BENCH_SCALE_SECONDS ?? 20);
const SIZES = (process.env.BENCH_SCALE_TENANTS ?? '10000,20000,50000').split(',').map(Number);
/** BENCH_SCALE_SIDES=ours runs one side (when profiling); BENCH_SCALE_PROFILE=DIR writes the servers' V8 CPU profiles there. */
const SIDES = (process.env.BENCH_SCALE_SIDES ?? 'ours,baseline').split(',') as Side[];
const PROFILE_DIR = process.env.BENCH_SCALE_PROFILE;
/** Seconds of traffic before the measured window: the Governor learns the ceilings, the hour's key sources are written. */
const WARM_SECONDS = 4;
const MAX_LAG_SECONDS = 5;
const MAX_FLUSH_P99_MS = 500;
const MAX_STALL_MS = 50;
const ITEMS_PER_REQUEST = 100;
const SECRET = 'bench-secret-0123456789abcdef0123456789';
const CEILING = { ratePerSecond: 5, burst: 5 };
type Side = 'ours' | 'baseline';

interface ServerReport {
  flushes: number;
  flushP50Ms: number;
  flushP99Ms: number;
  eventLoopMaxStallMs: number;
  mergedWindows: number;
  lagAtEndSeconds: number;
  summariesPerSecond: number;
  serverCores: number;
  ledgerBytesPerSummary: number;
  ledgerGbPerDay: number;
  /** Bytes the warm-up's first seconds wrote (the hour's key sources, on our side), counted 24 times a day. */
  hourlyBytes: number;
  catchUpTimesRealTime: number | null;
}

interface RunResult extends ServerReport {
  side: Side;
  tenants: number;
  held: boolean;
  readySamples: number;
  readyFailures: number;
  postgresCores: number;
  loadErrors: number;
  loadBehindSeconds: number;
}

const round = (value: number) => Math.round(value * 10) / 10;

function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

const tenantName = (i: number) => `tenant-${i}`;

/** Bytes on disk (table, indexes, TOAST) of the tables whose names match `like`, in the current schema. */
async function tableBytes(db: Db, like: string): Promise<number> {
  const { rows } = await db.query<{ bytes: string }>(
    `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::text AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE $1`,
    [like],
  );
  return Number(rows[0]!.bytes);
}

/**
 * User + system CPU of every PostgreSQL process, in microseconds: the live ones' own and, through the
 * postmaster's children's times (fields 16 and 17), every backend that ended meanwhile. Summing live processes
 * only went down when a backend ended between two readings (it printed -0.6 cores).
 */
function postgresCpuMicros(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith('postgres')) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // The postmaster is the one whose parent is no postgres process: its reaped children count there.
      const parent = Number(fields[1]);
      const parentIsPostgres = (() => {
        try {
          return readFileSync(`/proc/${parent}/comm`, 'utf8').startsWith('postgres');
        } catch {
          return false;
        }
      })();
      total += processCpuMicros(Number(entry));
      if (!parentIsPostgres) total += ((Number(fields[13]) + Number(fields[14])) * 1_000_000) / 100;
    } catch {
      // The process ended meanwhile: the postmaster's children's times hold it now.
    }
  }
  return total;
}

// ---------------------------------------------------------------------------------------------------------
// The servers (a child process each: `scale.ts serve <side> <tenants>`).

interface Stats {
  flushMs: number[];
  merged: number;
  summaries: number;
  measuring: boolean;
}

function limitSourceFor(): LimitSource {
  const record = (tenantId: string): TenantGovernanceRecord => ({ tenantId, tierId: 'standard', levels: { API_REQUESTS: { override: CEILING } } });
  return { loadTenants: async (ids) => new Map(ids.map((id) => [id, record(id)])), loadPlatformDefaults: async () => ({}) };
}

async function serveOurs(tenants: number): Promise<void> {
  await withBenchLedger(url, 6, async (db, store, schema) => {
    const stats: Stats = { flushMs: [], merged: 0, summaries: 0, measuring: false };
    let allSummaries = 0;
    const ledger = createLedgerRecorder(store, { referenceKeys: true });
    const timed: Recorder = {
      async record(admissions: readonly AdmissionSummary[], unresolved: readonly UnresolvedAdmissionSummary[], id?: string) {
        const started = performance.now();
        try {
          await ledger.record(admissions, unresolved, id);
        } finally {
          if (stats.measuring) stats.flushMs.push(performance.now() - started);
        }
        allSummaries += admissions.length;
        if (!stats.measuring) return;
        stats.summaries += admissions.length;
        for (const summary of admissions) if (summary.seconds > 1) stats.merged++;
      },
    };
    const governor = new Governor({ limitSource: limitSourceFor(), recorder: timed, onError: (error) => console.error('governor:', error) });
    const projections = await startProjections(db, store, [admissionTrendsProjection], {
      workers: projectionWorkers({ connectionString: url, schema }),
      onError: (error) => console.error('projection:', error),
    });
    const routes = createAdmissionRoutes({
      governor,
      inferenceSpend: { record: () => ({ status: 'recorded' }) },
      callers: createServiceCallers(createTokenVerifier({ secret: SECRET })),
    });
    const logger = pino({ level: 'warn' });
    const readiness = [projectionReadiness(() => projections.lag(), MAX_LAG_SECONDS)];
    const server = createServer({ logger, readiness }, routes);
    const { port } = await listen(server, 0, '127.0.0.1');
    const token = await mintToken({ secret: SECRET, role: 'SERVICE', ttl: 3600 });
    await serveMeasured(db, tenants, 'gl\\_events\\_summaries%', true, { port, token }, stats, async () => {
      const lag = (await projections.lag())[0]!;
      await governor.close().catch(() => {});
      await projections.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      const started = performance.now();
      await rebuildProjection(db, store, admissionTrendsProjection);
      const catchUp = allSummaries / ((performance.now() - started) / 1000) / tenants;
      return { lagAtEndSeconds: lag.secondsBehind, catchUpTimesRealTime: catchUp };
    });
  });
}

async function serveBaseline(tenants: number): Promise<void> {
  await withBenchSchema(url, 3, async (db) => {
    await db.exec(`
      CREATE TABLE bl_summaries (tenant_id text NOT NULL, dimension text NOT NULL, allowance text, from_second bigint NOT NULL, seconds int NOT NULL,
        admitted_units bigint NOT NULL, admitted_messages bigint NOT NULL, shed_units bigint NOT NULL, shed_messages bigint NOT NULL, hit_seconds int NOT NULL);
      CREATE TABLE bl_trend_minute (tenant_id text NOT NULL, dimension text NOT NULL, bucket_start bigint NOT NULL, admitted_units bigint NOT NULL,
        admitted_messages bigint NOT NULL, shed_units bigint NOT NULL, shed_messages bigint NOT NULL, PRIMARY KEY (tenant_id, dimension, bucket_start))`);
    const stats: Stats = { flushMs: [], merged: 0, summaries: 0, measuring: false };
    // Per tenant: the second its window counts, the units used in it, and that second's tallies.
    const windows = new Map<string, { second: number; used: number; counts: number[] }>();
    let closed: { tenant: string; second: number; counts: number[] }[] = [];
    let trendSecond = Math.floor(Date.now() / 1000);
    const decisions = (items: { tenantId: string; units: number }[]) => {
      const second = Math.floor(Date.now() / 1000);
      return items.map(({ tenantId, units }) => {
        let window = windows.get(tenantId);
        if (window === undefined) windows.set(tenantId, (window = { second, used: 0, counts: [0, 0, 0, 0, 0] }));
        if (window.second !== second) {
          closed.push({ tenant: tenantId, second: window.second, counts: window.counts });
          window.second = second;
          window.used = 0;
          window.counts = [0, 0, 0, 0, 0];
        }
        const admitted = window.used + units <= CEILING.burst;
        if (admitted) window.used += units;
        window.counts[admitted ? 0 : 2]! += units;
        window.counts[admitted ? 1 : 3]! += 1;
        if (!admitted) window.counts[4] = 1;
        return { admitted, behaviour: admitted ? 'ADMIT' : 'SHED', limit: CEILING.burst, remaining: CEILING.burst - window.used, retryAfterSeconds: admitted ? 0 : 1 };
      });
    };
    const server = createBareServer((req, res) => {
      if (req.url === '/readyz') {
        const ok = Math.floor(Date.now() / 1000) - trendSecond <= MAX_LAG_SECONDS;
        res.writeHead(ok ? 200 : 503).end();
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.headers.authorization !== `Bearer ${SECRET}`) return res.writeHead(401).end();
        const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { items: { tenantId: string; units: number }[] };
        const text = JSON.stringify({ decisions: decisions(parsed.items) });
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // Each second: the tenants' closed seconds, one INSERT and one upsert (a tenant seen only in an earlier
    // second is closed here too, so its summary is never later than a second).
    let flushing = false;
    const flush = async () => {
      if (flushing) return;
      flushing = true;
      const now = Math.floor(Date.now() / 1000);
      for (const [tenant, window] of windows) {
        if (window.second < now && window.counts[1]! + window.counts[3]! > 0) {
          closed.push({ tenant, second: window.second, counts: window.counts });
          window.counts = [0, 0, 0, 0, 0];
        }
      }
      const batch = closed;
      closed = [];
      const started = performance.now();
      try {
        if (batch.length > 0) {
          const columns = [batch.map((s) => s.tenant), batch.map((s) => s.second), ...[0, 1, 2, 3, 4].map((c) => batch.map((s) => s.counts[c]))];
          await db.query(
            `INSERT INTO bl_summaries SELECT t, 'API_REQUESTS', NULL, s, 1, au, am, su, sm, h FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::int[]) AS u(t, s, au, am, su, sm, h)`,
            columns,
          );
          await db.query(
            `INSERT INTO bl_trend_minute SELECT t, 'API_REQUESTS', m, sum(au), sum(am), sum(su), sum(sm) FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[]) AS u(t, s, au, am, su, sm)
               CROSS JOIN LATERAL (SELECT (s / 60) * 60 AS m) AS b GROUP BY t, m
             ON CONFLICT (tenant_id, dimension, bucket_start) DO UPDATE SET admitted_units = bl_trend_minute.admitted_units + excluded.admitted_units,
               admitted_messages = bl_trend_minute.admitted_messages + excluded.admitted_messages, shed_units = bl_trend_minute.shed_units + excluded.shed_units,
               shed_messages = bl_trend_minute.shed_messages + excluded.shed_messages`,
            columns.slice(0, 6),
          );
        }
        trendSecond = now;
      } finally {
        if (stats.measuring) {
          stats.flushMs.push(performance.now() - started);
          stats.summaries += batch.length;
        }
        flushing = false;
      }
    };
    let timer: NodeJS.Timeout | undefined;
    const tick = () => (timer = setTimeout(() => void flush().finally(tick), 1000 - (Date.now() % 1000) + 20));
    tick();
    const port = (server.address() as { port: number }).port;
    await serveMeasured(db, tenants, 'bl\\_summaries', false, { port, token: SECRET }, stats, async () => {
      clearTimeout(timer);
      while (flushing) await new Promise((resolve) => setTimeout(resolve, 10));
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      return { lagAtEndSeconds: Math.max(0, Date.now() / 1000 - trendSecond - 1), catchUpTimesRealTime: null };
    });
  });
}

/**
 * Announces the port, then on 'start' measures until 'stop': the event loop, the server's CPU, the ledger's
 * growth; answers the report and returns.
 */
async function serveMeasured(
  db: Db,
  tenants: number,
  ledgerTables: string,
  /** Whether what the warm-up wrote is written again every hour (our key sources). */
  hourly: boolean,
  ports: { port: number; token: string },
  stats: Stats,
  finish: () => Promise<{ lagAtEndSeconds: number; catchUpTimesRealTime: number | null }>,
): Promise<void> {
  const bytesAtStart = await tableBytes(db, ledgerTables);
  process.send!(ports);
  const loop = monitorEventLoopDelay({ resolution: 10 });
  let startedAt = 0;
  let cpuBefore = process.cpuUsage();
  let bytesBefore = 0;
  await new Promise<void>((resolve) => {
    process.on('message', (message) => {
      if (message !== 'start') return resolve();
      void tableBytes(db, ledgerTables).then((bytes) => {
        bytesBefore = bytes;
        startedAt = Date.now();
        cpuBefore = process.cpuUsage();
        loop.enable();
        stats.measuring = true;
      });
    });
  });
  const elapsedSeconds = (Date.now() - startedAt) / 1000;
  stats.measuring = false;
  loop.disable();
  const cpu = process.cpuUsage(cpuBefore);
  const grown = (await tableBytes(db, ledgerTables)) - bytesBefore;
  const hourlyBytes = hourly ? bytesBefore - bytesAtStart : 0;
  const { lagAtEndSeconds, catchUpTimesRealTime } = await finish();
  const report: ServerReport = {
    flushes: stats.flushMs.length,
    flushP50Ms: round(percentile(stats.flushMs, 0.5)),
    flushP99Ms: round(percentile(stats.flushMs, 0.99)),
    eventLoopMaxStallMs: round(loop.max / 1e6),
    mergedWindows: stats.merged,
    lagAtEndSeconds: round(lagAtEndSeconds),
    summariesPerSecond: Math.round(stats.summaries / elapsedSeconds),
    serverCores: round((cpu.user + cpu.system) / 1e6 / elapsedSeconds),
    // Per summary recorded in the window, at N summaries a second (a loaded host may carry fewer than N a
    // second: the figure stays the one for N), plus the warm-up's bytes every hour.
    ledgerBytesPerSummary: stats.summaries > 0 ? Math.round((grown / stats.summaries) * 1000) / 1000 : 0,
    ledgerGbPerDay: round(((stats.summaries > 0 ? (grown / stats.summaries) * tenants : grown / elapsedSeconds) * 86_400 + hourlyBytes * 24) / 1e9),
    hourlyBytes,
    catchUpTimesRealTime: catchUpTimesRealTime === null ? null : round(catchUpTimesRealTime),
  };
  process.send!(report);
}

// ---------------------------------------------------------------------------------------------------------
// The load process (`scale.ts load <port> <token> <tenants> <seconds>`): every second, each tenant's two items
// in requests of 100 items spread over the first 800 ms, on 16 kept-alive connections. It reports the answers
// that were not 200 and the seconds it had not finished when the next began.

async function load(port: number, token: string, tenants: number, seconds: number): Promise<void> {
  const bodies: string[] = [];
  for (let first = 0; first < tenants; first += ITEMS_PER_REQUEST / 2) {
    const items = [];
    for (let i = first; i < Math.min(tenants, first + ITEMS_PER_REQUEST / 2); i++) {
      items.push({ tenantId: tenantName(i), dimension: 'API_REQUESTS', units: 3 }, { tenantId: tenantName(i), dimension: 'API_REQUESTS', units: 10 });
    }
    bodies.push(JSON.stringify({ items }));
  }
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  let errors = 0;
  let firstError = '';
  let behind = 0;
  let pending = 0;
  const send = (body: string) => {
    pending++;
    const req = httpRequest(
      { port, host: '127.0.0.1', path: '/v1/admissions', method: 'POST', agent, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        if (res.statusCode !== 200) {
          errors++;
          if (firstError === '') res.on('data', (chunk: Buffer) => (firstError ||= `${res.statusCode}: ${chunk.toString('utf8').slice(0, 200)}`));
        }
        res.resume();
        res.on('end', () => pending--);
      },
    );
    req.on('error', (error) => {
      errors++;
      firstError ||= error.message;
      pending--;
    });
    req.end(body);
  };
  process.send!({ ready: true });
  const SLICES = 40;
  for (let second = 0; second < seconds; second++) {
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 50));
    if (pending > 0) behind++;
    for (let slice = 0; slice < SLICES; slice++) {
      const from = Math.floor((bodies.length * slice) / SLICES);
      const to = Math.floor((bodies.length * (slice + 1)) / SLICES);
      for (let b = from; b < to; b++) send(bodies[b]!);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  while (pending > 0) await new Promise((resolve) => setTimeout(resolve, 50));
  process.send!({ errors, behind, firstError });
  agent.destroy();
}

// ---------------------------------------------------------------------------------------------------------
// The run.

const self = fileURLToPath(import.meta.url);

function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once('message', (message) => resolve(message as T));
    child.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
  });
}

async function readyzStatus(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest({ port, host: '127.0.0.1', path: '/readyz', timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

async function run(side: Side, tenants: number): Promise<RunResult> {
  const execArgv = PROFILE_DIR ? [...process.execArgv, '--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : process.execArgv;
  const server = fork(self, ['serve', side, String(tenants)], { execArgv, stdio: 'inherit' });
  const { port, token } = await nextMessage<{ port: number; token: string }>(server);
  const loader = fork(self, ['load', String(port), token, String(tenants), String(WARM_SECONDS + SECONDS)], { execArgv: process.execArgv, stdio: 'inherit' });
  const pinned = pinToCore(loader.pid!, 1);
  if (!pinned) console.error('the load process is not pinned (taskset missing, one core, or BENCH_PIN=0)');
  await nextMessage(loader);
  const loadDone = nextMessage<{ errors: number; behind: number; firstError: string }>(loader);
  await new Promise((resolve) => setTimeout(resolve, WARM_SECONDS * 1000));
  server.send('start');
  const postgresBefore = postgresCpuMicros();
  const startedAt = Date.now();
  let readySamples = 0;
  let readyFailures = 0;
  while (Date.now() - startedAt < SECONDS * 1000) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    readySamples++;
    if ((await readyzStatus(port)) !== 200) readyFailures++;
  }
  const postgresCores = (postgresCpuMicros() - postgresBefore) / 1e6 / ((Date.now() - startedAt) / 1000);
  const loadReport = await loadDone;
  const reportDone = nextMessage<ServerReport>(server);
  server.send('stop');
  if (loadReport.firstError) console.error(`load: ${loadReport.errors} answers not 200, the first: ${loadReport.firstError}`);
  const report = await reportDone;
  // Each child ends on its own once disconnected (a profiled server writes its profile then); killed after 10 s.
  await Promise.all(
    [server, loader].map(async (child) => {
      if (child.connected) child.disconnect();
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      if ((await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('late'), 10_000))])) === 'late') child.kill();
    }),
  );
  const result: RunResult = {
    side,
    tenants,
    held: false,
    ...report,
    readySamples,
    readyFailures,
    postgresCores: round(postgresCores),
    loadErrors: loadReport.errors,
    loadBehindSeconds: loadReport.behind,
  };
  result.held =
    result.mergedWindows === 0 &&
    result.flushP99Ms < MAX_FLUSH_P99_MS &&
    result.eventLoopMaxStallMs <= MAX_STALL_MS &&
    result.readyFailures === 0 &&
    result.lagAtEndSeconds <= MAX_LAG_SECONDS &&
    result.loadErrors === 0 &&
    result.summariesPerSecond >= tenants * 0.95;
  return result;
}

/** The host's start-time figure: the compiled service's start on PostgreSQL (median of 3), or null without dist/. */
function startTimeFigure(): unknown {
  if (process.env.BENCH_SCALE_START_TIME === '0') return null;
  const started = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(new URL('./start-time.ts', import.meta.url))], {
    env: { ...process.env, BENCH_START_RUNS: '3' },
    encoding: 'utf8',
    timeout: 300_000,
  });
  const last = started.stdout?.trim().split('\n').at(-1);
  try {
    return last ? JSON.parse(last) : null;
  } catch {
    return null;
  }
}

async function measure(): Promise<void> {
  const load = loadavg()[0]!;
  const results: RunResult[] = [];
  let order: Side[] = SIDES;
  for (const tenants of SIZES) {
    for (const side of order) {
      const result = await run(side, tenants);
      console.log(JSON.stringify(result));
      results.push(result);
    }
    order = [...order].reverse();
  }
  const largestHeld = (side: Side) => Math.max(0, ...results.filter((each) => each.side === side && each.held).map((each) => each.tenants));
  const perTenants = (side: Side) =>
    results
      .filter((each) => each.side === side)
      .map(({ tenants, held, flushP50Ms, flushP99Ms, eventLoopMaxStallMs, mergedWindows, readyFailures, lagAtEndSeconds, summariesPerSecond, serverCores, postgresCores, ledgerBytesPerSummary, ledgerGbPerDay, catchUpTimesRealTime }) => ({
        tenants,
        held,
        flushP50Ms,
        flushP99Ms,
        eventLoopMaxStallMs,
        mergedWindows,
        readyFailures,
        lagAtEndSeconds,
        summariesPerSecond,
        serverCores,
        postgresCores,
        ledgerBytesPerSummary,
        ledgerGbPerDay,
        catchUpTimesRealTime,
      }));
  const ours = largestHeld('ours');
  const baseline = largestHeld('baseline');
  console.log(
    JSON.stringify({
      bench: 'scale',
      ours,
      baseline,
      ratio: baseline > 0 ? round(ours / baseline) : null,
      unit: `largest N of ${SIZES.join('/')} active tenants held for ${SECONDS} s (no window merged, flush p99 < ${MAX_FLUSH_P99_MS} ms, no stall > ${MAX_STALL_MS} ms, /readyz 200 throughout, trend lag <= ${MAX_LAG_SECONDS} s)`,
      baselineIs: 'bare minimum doing the same durable work: node:http + a fixed window per tenant in a Map + each second one unnest INSERT of the summaries and one upsert of the trend minute rows',
      generator: 'a paced Node HTTP client in a process of its own, pinned with taskset to core 1, 16 kept-alive connections, 100 items a request',
      perTenants: perTenants('ours'),
      baselinePerTenants: perTenants('baseline'),
      startTime: startTimeFigure(),
      loadAverageAtStart: round(load),
      seconds: SECONDS,
    }),
  );
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'serve') await (args[0] === 'ours' ? serveOurs(Number(args[1])) : serveBaseline(Number(args[1])));
else if (mode === 'load') await load(Number(args[0]), args[1]!, Number(args[2]), Number(args[3]));
else await measure();
