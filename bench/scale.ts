// Real-time capacity through the doors: N active tenants, each admitted and shed every second, the traffic sent
// over HTTP by wrk in a process of its own, pinned with taskset to core 1, paced by a Lua schedule
// (bench/support/load.ts, pacedHttpLoad): every second, spread over its first 800 ms,
//   - 2% of the tenants (BENCH_SCALE_INGEST_SHARE) through the HTTP ingest door: two requests each, POST
//     /v1/ingest/<tenant> with the tenant's ingest key (X-Device-Key) and a client address of its own
//     (X-Forwarded-For from a trusted proxy), 3 readings each against an INGEST ceiling of 5 a second (202, then 429);
//   - the rest through the admission API: POST /v1/admissions, 100 items a request (per tenant 3 units then 10
//     against an API_REQUESTS ceiling of 5 a second),
// for BENCH_SCALE_SECONDS (default 180) after a warm-up that lasts until the server has settled (at least 4 s,
// at most 60; reported as warmUpSeconds) at each N of BENCH_SCALE_TENANTS (default 10000,20000,50000,100000,200000),
// each server on a fresh schema, in a process of its own. `--quick` (or BENCH_QUICK=1): 2,000 and 10,000
// tenants for 8 s each, no start-time figure: proves the bench runs.
//
// ours:     the HTTP ingest door (startDoorParts + startIngest as the service builds them: edge limit, key look-up
//           cached, counting sink) and the admission routes -> Governor -> ledger Recorder (summary references) ->
//           PostgreSQL ledger -> the projections the service runs in worker threads (WORKER_PROJECTIONS: the
//           admission trends and the per-second demand the limit preview replays), each in its thread, /readyz
//           with the projections' readiness check at the run's own 5 s bound (beyond each one's pace), so the
//           demand's lag counts there; the trend lag is the trends'. (Runs before 2026-12-05 ran the trends alone.)
// baseline: the bare minimum doing the same durable work: node:http reading the same requests (the ingest key
//           looked up in a Map), a fixed window per tenant and dimension in a Map, and each second the closed
//           second's summaries appended with one unnest INSERT to a plain table (which holds each tenant's
//           per-second demand too, what our demand read model keeps) and the trend minute rows upserted
//           by a hand-written statement; /readyz 200 while the trend rows are at most 5 s behind.
// floor:    (BENCH_SCALE_SIDES=floor, never by default) node:http answering the same requests with constant answers,
//           nothing checked or recorded: what the traffic's HTTP alone costs on this host, beside ours' cores.
// The two alternate: at each N the one that ran second runs first at the next.
//
// Per N and side: flush p50/p99 (ours: the Recorder's record(); baseline: its INSERT and upsert), the longest
// event-loop stall (monitorEventLoopDelay), the stalls over the bound and how many of them fell on a pause of the
// whole machine (support/hostPauses.ts; reported, not excused), windows merged (a summary spanning more than a
// second), /readyz asked over HTTP every second (answers other than 200), the trend lag at the end, summaries
// per second (one per admission API tenant, two per ingest tenant: INGEST and API_REQUESTS), the server's and
// PostgreSQL's cores, the server's main thread's cores and CPU-µs per HTTP request, the generator's answers by
// status and its late requests, ledgerGbPerDay (bytes on disk, table + indexes + TOAST, of the ledger's summary
// partitions grown over the measured window, per summary, at the full traffic's summaries a second for a day,
// plus what the warm-up wrote (our key sources) 32 times: a key is written in full again 30-60 minutes after it
// was, 45 on average), and catchUpTimesRealTime (the run's summaries replayed into emptied trend and demand
// tables by the service's projection set, each in its thread as after an outage, both at once, in seconds of the
// full traffic per second). Held: no window merged, flush p99 < 500 ms, no stall > 50 ms, /readyz 200 throughout, lag <= 5 s,
// every answer 200 / 202 / 429, and at least 95% of the traffic's summaries a second; a run's `missed` names each
// criterion it did not meet, with its figure. Sizes go up; past two sizes in
// a row that neither side held, the larger ones are not run (`notRun`), except in quick mode.
//
// Last line: JSON, `ours` and `baseline` the largest N held, ours' ledgerGbPerDay and catchUpTimesRealTime at
// each N, and the host's start-time figure (bench/start-time.ts: the compiled service's start on PostgreSQL,
// when `dist/` is built) so readers can tell hosts apart.
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createBareServer, request as httpRequest } from 'node:http';
import { Session } from 'node:inspector';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { admissionTrendsProjection } from '../projections/admissionTrends.ts';
import { projectionWorkers, WORKER_PROJECTIONS } from '../projections/workerProjections.ts';
import { registerIngestCredential } from '../src/auth/ingestKeys.ts';
import { mintToken } from '../src/auth/token.ts';
import { createTokenVerifier } from '../src/auth/verifyToken.ts';
import { readSettings } from '../src/config.ts';
import type { Db } from '../src/db/db.ts';
import { createAdmissionRoutes, createServiceCallers, startDoorParts, startIngest } from '../src/doors/index.ts';
import { SERVICE_NODE_FLAGS, tuneGarbageCollection } from '../src/gcTuning.ts';
import { Governor } from '../src/governance/index.ts';
import type { AdmissionSummary, LimitSource, Recorder, TenantGovernanceRecord, UnresolvedAdmissionSummary } from '../src/governance/index.ts';
import { createServer, listen } from '../src/http-server/server.ts';
import { createLedgerRecorder } from '../src/ledger/ledgerRecorder.ts';
import { projectionReadiness } from '../src/ledger/projectionReadiness.ts';
import { startProjections } from '../src/ledger/projectionSet.ts';
import type { ProjectionIsolation } from '../src/ledger/projectionWorker.ts';
import { realtimePriority, sessionNice, setRealtimePriority, setSessionNice } from '../src/sessionPriority.ts';
import { emptyForReplay } from '../src/ledger/rebuild.ts';
import { childProcessesOf, processCpuMicros } from '../test/support/replicas.ts';
import { withBenchLedger, withBenchSchema } from './support/benchSchema.ts';
import { coreSteals, longestPauseMs, machinePauses, probeHostPauses, stolenMs, type HostPause } from './support/hostPauses.ts';
import { pacedHttpLoad, type PacedRequest } from './support/load.ts';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const QUICK = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const SECONDS = Number(process.env.BENCH_SCALE_SECONDS ?? (QUICK ? 8 : 180));
const SIZES = (process.env.BENCH_SCALE_TENANTS ?? (QUICK ? '2000,10000' : '10000,20000,50000,100000,200000')).split(',').map(Number);
/** The share of the tenants whose traffic comes through the HTTP ingest door (the rest through the admission API). */
const INGEST_SHARE = Number(process.env.BENCH_SCALE_INGEST_SHARE ?? 0.02);
/** BENCH_SCALE_SIDES=ours runs one side (when profiling); BENCH_SCALE_PROFILE=DIR writes the servers' V8 CPU profiles there. */
const SIDES = (process.env.BENCH_SCALE_SIDES ?? 'ours,baseline').split(',') as Side[];
const PROFILE_DIR = process.env.BENCH_SCALE_PROFILE;
/**
 * BENCH_SCALE_TRACE=1: our server prints each flush (from-to on its performance.now() clock, ms, summaries)
 * and each turn of its event loop over 30 ms late to stderr, and its garbage collections (--trace-gc-nvp).
 */
const TRACE = process.env.BENCH_SCALE_TRACE === '1';
/**
 * BENCH_SCALE_NICE: the nice value of every server's session, as the service's GOVERNANCE_NICE sets its own; unset,
 * the sessions run as started (nice 0). At -5 on a slower host 50,000 held in 2 of 4 runs, against 1 of 5 at 0
 * (bench/RESULTS.md, 2026-12-05 17:20-19:15): not enough to tell, so not the default. Below 0 needs CAP_SYS_NICE;
 * refused, the run says so. Each line's `serverNice` is what the server ran at.
 */
const SERVER_NICE = process.env.BENCH_SCALE_NICE === undefined ? undefined : Number(process.env.BENCH_SCALE_NICE);
/**
 * BENCH_SCALE_REALTIME: every server's main thread under SCHED_RR at this priority (1..99), as the service's
 * GOVERNANCE_REALTIME_PRIORITY runs its admitting thread; unset, the normal policy. Needs CAP_SYS_NICE; refused,
 * the run says so. Each line's `serverRealtimePriority` is what the server's main thread ran at.
 */
const SERVER_REALTIME = process.env.BENCH_SCALE_REALTIME === undefined ? undefined : Number(process.env.BENCH_SCALE_REALTIME);
/**
 * BENCH_SCALE_PROFILE_MAIN=DIR: our server profiles its admitting thread alone while measuring (node:inspector,
 * a sample every 500 µs), and writes the profile there: --cpu-prof (BENCH_SCALE_PROFILE) profiles every thread,
 * the projection worker too, and with both threads profiled the long stalls did not come.
 */
const PROFILE_MAIN_DIR = process.env.BENCH_SCALE_PROFILE_MAIN;
/**
 * Seconds of traffic before the measured window, at least: the Governor learns the ceilings, keys are cached,
 * the hour's key sources are written. The warm-up lasts until the server has settled: SETTLED_FLUSHES flushes
 * in a row each of at most 1.5 seconds' summaries and under the flush bound, and then the trend lag within its
 * bound (MAX_LAG_SECONDS) at SETTLED_FLUSHES readings a second apart in a row, so the trends have caught up
 * with the start's first pages too (every tenant's first minute row, the first events of every key in full).
 * At most MAX_WARM_SECONDS; how long it took is reported (`warmUpSeconds`): a start at full traffic is a cost
 * of its own, not the 180 s.
 */
const WARM_SECONDS = 4;
const MAX_WARM_SECONDS = 60;
const SETTLED_FLUSHES = 3;
const MAX_LAG_SECONDS = 5;
const MAX_FLUSH_P99_MS = 500;
const MAX_STALL_MS = 50;
/** A stall over this is reported as near the bound (quartersOverNearStall): runs that held can still be told apart. */
const NEAR_STALL_MS = 30;
/** Stalls over the bound kept with their times (a server that stalls all along, the baseline's, would list hundreds). */
const MAX_STALLS_KEPT = 50;
/** How often the event-loop stall is sampled (monitorEventLoopDelay's resolution), ms. */
const STALL_RESOLUTION_MS = 1;
/** How often a day our side writes each key in full (src/ledger/keySourceIndex.ts: every 30-60 minutes, 45 on average). */
const SOURCES_A_DAY = 32;
const ITEMS_PER_REQUEST = 100;
const CONNECTIONS = 128;
/** Each second's requests go out over its first SPREAD_MS, from OFFSET_MS after the whole second. */
const SPREAD_MS = 800;
const OFFSET_MS = 50;
/** How long the catch-up may take before the run fails: at 0.2x real time, 180 s of traffic replays in 15 minutes. */
const CATCH_UP_TIMEOUT_MS = 30 * 60_000;
const SECRET = 'bench-secret-0123456789abcdef0123456789';
const CEILING = { ratePerSecond: 5, burst: 5 };
/** An ingest request: 3 readings (3 units), twice a second against the INGEST ceiling of 5: admitted, then shed. */
const INGEST_BODY = JSON.stringify({ readings: [0, 1, 2].map((i) => ({ deviceId: 'meter-1', measurements: { [`m${i}`]: i } })) });
/**
 * ours and baseline are compared; floor (BENCH_SCALE_SIDES=floor, never by default) is measured alone: what the
 * HTTP of this traffic costs a server that does nothing else (serveFloor).
 */
type Side = 'ours' | 'baseline' | 'floor';

interface ServerReport {
  flushes: number;
  flushP50Ms: number;
  flushP99Ms: number;
  eventLoopMaxStallMs: number;
  /**
   * The stalls over the bound (the first MAX_STALLS_KEPT), each as the quarter second it ended in (wall clock, ms)
   * and its length: the run tells which fell on a pause of the machine (stallsOverBoundOnHostPause).
   */
  stallsOverBound: { fromMs: number; toMs: number; ms: number }[];
  /** Quarter seconds whose longest stall was over NEAR_STALL_MS: how close the run came to the bound. Not a criterion. */
  quartersOverNearStall: number;
  /** The main thread's time runnable but not on a core (schedstat), ms a second of the window. Not a criterion. */
  mainThreadWaitingMsPerSecond: number;
  mergedWindows: number;
  lagAtEndSeconds: number;
  summariesPerSecond: number;
  /** The server's cores: its own process and its projection worker processes (GOVERNANCE_PROJECTION_WORKERS=process). */
  serverCores: number;
  /** Of serverCores, the projection worker processes'. */
  workerProcessCores: number;
  /** The nice value of the server's session (BENCH_SCALE_NICE, as granted); null where there are no autogroups. */
  serverNice: number | null;
  /** The SCHED_RR priority of the server's main thread (BENCH_SCALE_REALTIME, as granted); null: the normal policy. */
  serverRealtimePriority: number | null;
  /** The main thread's cores (it admits and answers; the projection has a worker thread of its own). */
  mainThreadCores: number;
  /** The main thread's CPU time per HTTP request answered, in µs: less disturbed by a loaded host than the rates. */
  mainThreadCpuMicrosPerRequest: number;
  ledgerBytesPerSummary: number;
  ledgerGbPerDay: number;
  /** Bytes the warm-up's first seconds wrote (the key sources, on our side), counted SOURCES_A_DAY times a day. */
  hourlyBytes: number;
  catchUpTimesRealTime: number | null;
}

interface RunResult extends ServerReport {
  side: Side;
  tenants: number;
  ingestTenants: number;
  held: boolean;
  /** The criteria not met, each with its figure (missedCriteria); empty when held. */
  missed: string[];
  readySamples: number;
  readyFailures: number;
  /** The measured second, status and reason of each /readyz answer other than 200. */
  readyFailuresAt: { second: number; status: number; reason?: string }[];
  postgresCores: number;
  /** Answers by HTTP status, from the generator (200: admission API; 202 / 429: ingest door). */
  statuses: Record<string, number>;
  loadErrors: number;
  /** Requests the generator sent more than a second after their place in the schedule. */
  loadLateRequests: number;
  generatorCores: number;
  /** Seconds of traffic before the measured window: until the server settled (WARM_SECONDS). */
  warmUpSeconds: number;
  loadAverage: number;
  /**
   * Pauses of the machine itself while measuring (support/hostPauses.ts: a probe process runnable but neither on a
   * core nor waiting for one): how many, and the longest, in ms. Reported beside the stalls; not a criterion.
   */
  hostPauses: number;
  hostPauseLongestMs: number;
  /** Of the stalls over the bound, those whose quarter second a pause of the machine overlapped. Not a criterion. */
  stallsOverBoundOnHostPause: number;
  /**
   * One core taken by the hypervisor while the other ran on (support/hostPauses.ts: a core's steal, /proc/stat):
   * steals of CORE_STEAL_MS or more, the longest, all steal in ms a minute, and the stalls over the bound whose
   * quarter second such a steal overlapped. The machine's, not the program's; reported, not excused.
   */
  coreSteals: number;
  coreStealLongestMs: number;
  stolenMsPerMinute: number;
  stallsOverBoundOnCoreSteal: number;
}

const round = (value: number) => Math.round(value * 10) / 10;

function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

const tenantName = (i: number) => `tenant-${i}`;
const ingestTenantsOf = (tenants: number) => Math.round(tenants * INGEST_SHARE);
/** Summaries the traffic makes a second: one per admission API tenant, two per ingest tenant (INGEST, API_REQUESTS). */
const summariesOf = (tenants: number) => tenants + ingestTenantsOf(tenants);

/** Bytes on disk (table, indexes, TOAST) of the tables whose names match `like`, in the current schema. */
async function tableBytes(db: Db, like: string): Promise<number> {
  const { rows } = await db.query<{ bytes: string }>(
    `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::text AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE $1`,
    [like],
  );
  return Number(rows[0]!.bytes);
}

/** GOVERNANCE_PROJECTION_WORKERS as the service reads it; the bench's server always runs the projections in workers. */
function workerIsolation(): ProjectionIsolation {
  const setting = readSettings(process.env.GOVERNANCE_PROJECTION_WORKERS === undefined ? {} : { GOVERNANCE_PROJECTION_WORKERS: process.env.GOVERNANCE_PROJECTION_WORKERS }).projectionWorkers;
  if (setting === 'off') throw new Error('bench/scale.ts runs the projections in workers, as the service does on PostgreSQL: GOVERNANCE_PROJECTION_WORKERS=process or thread');
  return setting;
}

/**
 * User + system CPU of the live child processes of this process (the projection worker processes), in
 * microseconds: they run all through the measured window, so a child that ended meanwhile is a fault reported by
 * the projection's own error line, not a reading.
 */
function childrenCpuMicros(): Map<number, number> {
  const children = new Map<number, number>();
  for (const pid of childProcessesOf(process.pid)) {
    try {
      children.set(pid, processCpuMicros(pid));
    } catch {
      // Ended meanwhile.
    }
  }
  return children;
}

/** The CPU the children of `before` used since, and any child started since, in microseconds. */
function childrenCpuSince(before: Map<number, number>): number {
  let total = 0;
  for (const [pid, micros] of childrenCpuMicros()) total += micros - (before.get(pid) ?? 0);
  return total;
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

/** The main thread's time on a core and runnable but waiting for one so far (Linux schedstat), ns; NaN where unreadable. */
function mainThreadSchedstat(): [number, number] {
  try {
    const [onCpu, waiting] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ');
    return [Number(onCpu), Number(waiting)];
  } catch {
    return [NaN, NaN];
  }
}

/** User + system CPU of this process's main thread (its task's times in /proc, ticks of 1/100 s), in µs. */
function mainThreadCpuMicros(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / 100;
  } catch {
    return 0;
  }
}

// ---------------------------------------------------------------------------------------------------------
// The servers (a child process each: `scale.ts serve <side> <tenants>`).

interface Stats {
  /** Told each flush before measuring (its summaries and ms): says when the flushes have settled. */
  warming: { flushed: (summaries: number, ms: number) => void; readonly settled: boolean };
  flushMs: number[];
  merged: number;
  summaries: number;
  /** HTTP requests the server was asked while measuring (/readyz among them). */
  requests: number;
  measuring: boolean;
}

/** What a server announces: its port, the admission API's bearer token, and the ingest tenants' keys in order. */
interface Announced {
  port: number;
  token: string;
  ingestKeys: string[];
}

function limitSourceFor(): LimitSource {
  const record = (tenantId: string): TenantGovernanceRecord => ({
    tenantId,
    tierId: 'standard',
    levels: { API_REQUESTS: { override: CEILING }, INGEST: { override: CEILING } },
  });
  return { loadTenants: async (ids) => new Map(ids.map((id) => [id, record(id)])), loadPlatformDefaults: async () => ({}) };
}

async function serveOurs(tenants: number): Promise<void> {
  // As `governance serve` starts (src/gcTuning.ts).
  tuneGarbageCollection();
  await withBenchLedger(url, 10, async (db, store, schema) => {
    const stats: Stats = { warming: settleWatch(tenants), flushMs: [], merged: 0, summaries: 0, requests: 0, measuring: false };
    let allSummaries = 0;
    // As the service's (src/service.ts).
    const ledger = createLedgerRecorder(store, { referenceKeys: true });
    const timed: Recorder = {
      async record(admissions: readonly AdmissionSummary[], unresolved: readonly UnresolvedAdmissionSummary[], id?: string) {
        const started = performance.now();
        try {
          await ledger.record(admissions, unresolved, id);
        } finally {
          if (stats.measuring) stats.flushMs.push(performance.now() - started);
          else stats.warming.flushed(admissions.length, performance.now() - started);
          if (TRACE) console.error(`flush ${started.toFixed(0)}-${performance.now().toFixed(0)} ms: ${(performance.now() - started).toFixed(0)} ms, ${admissions.length} summaries${stats.measuring ? '' : ' (warm-up)'}`);
        }
        allSummaries += admissions.length;
        if (!stats.measuring) return;
        stats.summaries += admissions.length;
        for (const summary of admissions) if (summary.seconds > 1) stats.merged++;
      },
      // As the service's recorders: nothing is kept once record() resolved.
      released: (admissions) => ledger.released?.(admissions),
    };
    const governor = new Governor({ limitSource: limitSourceFor(), recorder: timed, onError: (error) => console.error('governor:', error) });
    const projections = await startProjections(db, store, WORKER_PROJECTIONS, {
      // The projection workers as the service runs them (GOVERNANCE_PROJECTION_WORKERS: process by default, or thread).
      workers: projectionWorkers({ connectionString: url, schema }, { isolation: workerIsolation() }),
      onError: (error) => console.error('projection:', error),
    });
    // The ingest door as the service builds it, behind a trusted proxy (the load's X-Forwarded-For is each
    // tenant's own client address, so the edge per-IP limit meters clients, not the generator).
    const logger = pino({ level: 'error' });
    const settings = readSettings({ TRUSTED_PROXY_CIDRS: '127.0.0.1/32' });
    const door = await startDoorParts({ settings, db, governor, logger });
    const ingestKeys = await registerKeys(db, ingestTenantsOf(tenants));
    const routes = [
      ...startIngest({ settings, logger, door }).routes,
      ...createAdmissionRoutes({
        governor,
        inferenceSpend: { record: () => ({ status: 'recorded' }) },
        callers: createServiceCallers(createTokenVerifier({ secret: SECRET })),
      }),
    ];
    const readiness = [projectionReadiness(() => projections.lag(), MAX_LAG_SECONDS)];
    const server = createServer({ logger, readiness }, routes);
    server.on('request', () => void (stats.measuring && stats.requests++));
    const { port } = await listen(server, 0, '127.0.0.1');
    const token = await mintToken({ secret: SECRET, role: 'SERVICE', ttl: 3600 });
    await serveMeasured(db, tenants, 'gl\\_events\\_summaries%', true, { port, token, ingestKeys }, stats, {
      lagSeconds: async () => (await projections.lag()).find((lag) => lag.projection === admissionTrendsProjection.name)!.secondsBehind,
      finish: async () => {
        await governor.close().catch(() => {});
        await projections.close();
        await door.close();
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        // Both read models emptied, then replayed from the ledger as the service catches them up after an
        // outage: its projection set started, each in a thread of its own, until both reach the head.
        for (const projection of WORKER_PROJECTIONS) await emptyForReplay(db, store, projection);
        const started = performance.now();
        const replay = await startProjections(db, store, WORKER_PROJECTIONS, {
          // The projection workers as the service runs them (GOVERNANCE_PROJECTION_WORKERS: process by default, or thread).
      workers: projectionWorkers({ connectionString: url, schema }, { isolation: workerIsolation() }),
          onError: (error) => console.error('projection:', error),
        });
        await replay.waitForCaughtUp({ timeoutMs: CATCH_UP_TIMEOUT_MS });
        const seconds = (performance.now() - started) / 1000;
        await replay.close();
        return allSummaries / summariesOf(tenants) / seconds;
      },
    });
  });
}

/** Says when SETTLED_FLUSHES flushes in a row were steady (see WARM_SECONDS); serveMeasured then watches the lag. */
function settleWatch(tenants: number): Stats['warming'] {
  let steady = 0;
  return {
    flushed: (summaries, ms) => {
      if (steady >= SETTLED_FLUSHES) return;
      steady = summaries <= summariesOf(tenants) * 1.5 && ms < MAX_FLUSH_P99_MS ? steady + 1 : 0;
    },
    get settled() {
      return steady >= SETTLED_FLUSHES;
    },
  };
}

/** A tenant key for each of the first `count` tenants, registered as an operator would (only its hash is stored). */
async function registerKeys(db: Db, count: number): Promise<string[]> {
  const keys: string[] = new Array<string>(count);
  const register = async (i: number) => {
    const registered = await registerIngestCredential(db, { tenantId: tenantName(i), kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    keys[i] = registered.key;
  };
  for (let from = 0; from < count; from += 100) await Promise.all(Array.from({ length: Math.min(100, count - from) }, (_, j) => register(from + j)));
  return keys;
}

async function serveBaseline(tenants: number): Promise<void> {
  await withBenchSchema(url, 3, async (db) => {
    await db.exec(`
      CREATE TABLE bl_summaries (tenant_id text NOT NULL, dimension text NOT NULL, allowance text, from_second bigint NOT NULL, seconds int NOT NULL,
        admitted_units bigint NOT NULL, admitted_messages bigint NOT NULL, shed_units bigint NOT NULL, shed_messages bigint NOT NULL, hit_seconds int NOT NULL);
      CREATE TABLE bl_trend_minute (tenant_id text NOT NULL, dimension text NOT NULL, bucket_start bigint NOT NULL, admitted_units bigint NOT NULL,
        admitted_messages bigint NOT NULL, shed_units bigint NOT NULL, shed_messages bigint NOT NULL, PRIMARY KEY (tenant_id, dimension, bucket_start))`);
    const stats: Stats = { warming: settleWatch(tenants), flushMs: [], merged: 0, summaries: 0, requests: 0, measuring: false };
    // Per tenant and dimension: the second its window counts, the units used in it, and that second's tallies.
    type Window = { tenant: string; dimension: string; second: number; used: number; counts: number[] };
    const windows = new Map<string, Window>();
    let closed: { tenant: string; dimension: string; second: number; counts: number[] }[] = [];
    let trendSecond = Math.floor(Date.now() / 1000);
    const decide = (tenant: string, dimension: string, units: number, second: number): boolean => {
      const id = `${tenant}\u0000${dimension}`;
      let window = windows.get(id);
      if (window === undefined) windows.set(id, (window = { tenant, dimension, second, used: 0, counts: [0, 0, 0, 0, 0] }));
      if (window.second !== second) {
        if (window.counts[1]! + window.counts[3]! > 0) closed.push({ tenant, dimension, second: window.second, counts: window.counts });
        window.second = second;
        window.used = 0;
        window.counts = [0, 0, 0, 0, 0];
      }
      const admitted = window.used + units <= CEILING.burst;
      if (admitted) window.used += units;
      window.counts[admitted ? 0 : 2]! += units;
      window.counts[admitted ? 1 : 3]! += 1;
      if (!admitted) window.counts[4] = 1;
      return admitted;
    };
    // The ingest keys: a Map from key to tenant (the bare minimum of a key check).
    const ingestKeys = Array.from({ length: ingestTenantsOf(tenants) }, () => randomBytes(32).toString('base64url'));
    const keyTenants = new Map(ingestKeys.map((key, i) => [key, tenantName(i)]));
    const INGEST_PATH = '/v1/ingest/';
    const server = createBareServer((req, res) => {
      if (req.url === '/readyz') {
        const ok = Math.floor(Date.now() / 1000) - trendSecond <= MAX_LAG_SECONDS;
        res.writeHead(ok ? 200 : 503).end();
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const second = Math.floor(Date.now() / 1000);
        const send = (status: number, body: unknown) => {
          const text = JSON.stringify(body);
          res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
        };
        if (req.url?.startsWith(INGEST_PATH)) {
          const tenant = req.url.slice(INGEST_PATH.length);
          const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { readings: unknown[] };
          if (keyTenants.get(String(req.headers['x-device-key'])) !== tenant) return send(401, { error: 'unknown key' });
          // As our door: the readings first, API_REQUESTS for a request whose readings were admitted.
          if (!decide(tenant, 'INGEST', parsed.readings.length, second)) return send(429, { error: 'rate limited' });
          decide(tenant, 'API_REQUESTS', 1, second);
          return send(202, { accepted: parsed.readings.length });
        }
        if (req.headers.authorization !== `Bearer ${SECRET}`) return send(401, { error: 'unauthenticated' });
        const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { items: { tenantId: string; dimension: string; units: number }[] };
        const decisions = parsed.items.map(({ tenantId, dimension, units }) => {
          const admitted = decide(tenantId, dimension, units, second);
          return { admitted, behaviour: admitted ? 'ADMIT' : 'SHED', limit: CEILING.burst, retryAfterSeconds: admitted ? 0 : 1 };
        });
        send(200, { decisions });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // Each second: the windows' closed seconds, one INSERT and one upsert (a window seen only in an earlier
    // second is closed here too, so its summary is never later than a second).
    let flushing = false;
    const flush = async () => {
      if (flushing) return;
      flushing = true;
      const now = Math.floor(Date.now() / 1000);
      for (const window of windows.values()) {
        if (window.second < now && window.counts[1]! + window.counts[3]! > 0) {
          closed.push({ tenant: window.tenant, dimension: window.dimension, second: window.second, counts: window.counts });
          window.counts = [0, 0, 0, 0, 0];
        }
      }
      const batch = closed;
      closed = [];
      const started = performance.now();
      try {
        if (batch.length > 0) {
          const columns = [
            batch.map((s) => s.tenant),
            batch.map((s) => s.dimension),
            batch.map((s) => s.second),
            ...[0, 1, 2, 3, 4].map((c) => batch.map((s) => s.counts[c])),
          ];
          await db.query(
            `INSERT INTO bl_summaries SELECT t, d, NULL, s, 1, au, am, su, sm, h
               FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::int[]) AS u(t, d, s, au, am, su, sm, h)`,
            columns,
          );
          await db.query(
            `INSERT INTO bl_trend_minute SELECT t, d, m, sum(au), sum(am), sum(su), sum(sm)
               FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[]) AS u(t, d, s, au, am, su, sm)
               CROSS JOIN LATERAL (SELECT (s / 60) * 60 AS m) AS b GROUP BY t, d, m
             ON CONFLICT (tenant_id, dimension, bucket_start) DO UPDATE SET admitted_units = bl_trend_minute.admitted_units + excluded.admitted_units,
               admitted_messages = bl_trend_minute.admitted_messages + excluded.admitted_messages, shed_units = bl_trend_minute.shed_units + excluded.shed_units,
               shed_messages = bl_trend_minute.shed_messages + excluded.shed_messages`,
            columns.slice(0, 7),
          );
        }
        trendSecond = now;
      } catch (error) {
        // Kept for the next flush, as a durable writer would (the service's Recorder keeps its batch too): a
        // statement PostgreSQL did not answer in time (at 200,000 one took past the pool's read timeout) used to
        // end this server and the bench with it. The flush's time still counts.
        closed = batch.concat(closed);
        console.error(`baseline: a flush of ${batch.length} summaries failed and is kept for the next: ${error instanceof Error ? error.message : String(error)}`);
      } finally {
        if (stats.measuring) {
          stats.flushMs.push(performance.now() - started);
          stats.summaries += batch.length;
        } else stats.warming.flushed(batch.length, performance.now() - started);
        flushing = false;
      }
    };
    server.on('request', () => void (stats.measuring && stats.requests++));
    let timer: NodeJS.Timeout | undefined;
    let stopped = false;
    // A flush under way when the run finishes schedules no other (the pool is closed after it).
    const tick = () => {
      if (!stopped) timer = setTimeout(() => void flush().finally(tick), 1000 - (Date.now() % 1000) + 20);
    };
    tick();
    const port = (server.address() as { port: number }).port;
    await serveMeasured(db, tenants, 'bl\\_summaries', false, { port, token: SECRET, ingestKeys }, stats, {
      lagSeconds: async () => Math.max(0, Date.now() / 1000 - trendSecond - 1),
      finish: async () => {
        stopped = true;
        clearTimeout(timer);
        while (flushing) await new Promise((resolve) => setTimeout(resolve, 10));
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        return null;
      },
    });
  });
}

/**
 * The floor: node:http reading each request's body and answering it with a constant answer of the size ours
 * gives (202 `{"accepted":3}` on the ingest door; on the admission API 100 decisions, admitted and refused in
 * turn). No parsing, no key or token check, no metering, nothing recorded: the least any server on this host
 * spends on this traffic's HTTP, set beside ours' cores at the same N. It records no summary, so it never holds.
 */
async function serveFloor(tenants: number): Promise<void> {
  await withBenchSchema(url, 1, async (db) => {
    const stats: Stats = { warming: settleWatch(tenants), flushMs: [], merged: 0, summaries: 0, requests: 0, measuring: false };
    const decision = (admitted: boolean) =>
      JSON.stringify({ admitted, behaviour: admitted ? 'ADMIT' : 'SHED', limit: 5, remaining: admitted ? 2 : 0, retryAfterSeconds: admitted ? 0 : 1, burst: 5, neverFits: false, scope: 'TENANT', source: 'TIER', quotaExceeded: false, quotaPeriod: null });
    const decisions = `{"decisions":[${Array.from({ length: ITEMS_PER_REQUEST }, (_, i) => decision(i % 2 === 0)).join(',')}]}`;
    const accepted = '{"accepted":3}';
    const server = createBareServer((req, res) => {
      if (req.url === '/readyz') {
        res.writeHead(200).end();
        return;
      }
      req.on('data', () => {});
      req.on('end', () => {
        const ingest = req.url?.startsWith('/v1/ingest/') === true;
        const text = ingest ? accepted : decisions;
        res.writeHead(ingest ? 202 : 200, { 'Content-Type': 'application/json', 'Content-Length': text.length }).end(text);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    server.on('request', () => void (stats.measuring && stats.requests++));
    // Nothing is flushed: the warm-up settles on its first seconds.
    const settling = setInterval(() => stats.warming.flushed(0, 0), 1000);
    const port = (server.address() as { port: number }).port;
    const ingestKeys = Array.from({ length: ingestTenantsOf(tenants) }, () => randomBytes(32).toString('base64url'));
    await serveMeasured(db, tenants, 'floor\\_nothing', false, { port, token: SECRET, ingestKeys }, stats, {
      lagSeconds: async () => 0,
      finish: async () => {
        clearInterval(settling);
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        return null;
      },
    });
  });
}

/**
 * Traced: what the admitting thread is doing while it is late, seen from a thread of its own. The stall lines
 * read the /proc counters only once the stall is over; one stall of 110 ms had the admitting thread 14 ms on a
 * core and none waiting for one (blocked in the kernel). Every 5 ms the watcher checks the time of the thread's
 * last 1 ms tick (shared memory); while it is over 30 ms old, it prints the thread's state, the kernel function it
 * sleeps in (wchan), its system call and the host's I/O pressure (PSI), straight to stderr (fd 2, not through
 * the late thread).
 */
function watchTheAdmittingThread(): void {
  const lastTick = new Float64Array(new SharedArrayBuffer(8));
  setInterval(() => (lastTick[0] = Date.now()), 1).unref();
  lastTick[0] = Date.now();
  const watcher = new Worker(
    `const { workerData } = require('node:worker_threads');
    const { readFileSync, writeSync } = require('node:fs');
    const lastTick = new Float64Array(workerData.buffer);
    const task = '/proc/self/task/' + workerData.pid + '/';
    const read = (file) => { try { return readFileSync(file, 'utf8').trim(); } catch { return '?'; } };
    setInterval(() => {
      const late = Date.now() - lastTick[0];
      if (late < 30) return;
      const state = read(task + 'stat').split(') ')[1]?.split(' ')[0];
      const io = read('/proc/pressure/io').split('\\n').map((line) => line.split(' ')[0] + ' ' + line.split('total=')[1]).join(', ');
      writeSync(2, 'late ' + late.toFixed(0) + ' ms (at ' + Date.now() + '): admitting thread state ' + state + ', wchan ' + read(task + 'wchan') + ', syscall ' + read(task + 'syscall').split(' ')[0] + '; io pressure totals (µs) ' + io + '\\n');
    }, 5);`,
    { eval: true, workerData: { buffer: lastTick.buffer, pid: process.pid } },
  );
  watcher.unref();
}

/** Profiles this thread alone (BENCH_SCALE_PROFILE_MAIN); the profile's clock is the monotonic one, in µs. */
async function startMainProfile(): Promise<{ stopInto: (directory: string) => Promise<void> }> {
  const session = new Session();
  session.connect();
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))));
  await post('Profiler.enable');
  await post('Profiler.setSamplingInterval', { interval: 500 });
  await post('Profiler.start');
  return {
    async stopInto(directory) {
      const { profile } = (await post('Profiler.stop')) as { profile: unknown };
      mkdirSync(directory, { recursive: true });
      writeFileSync(join(directory, `main-${process.pid}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/**
 * Announces the port, then measures from 'start' to 'stop': the event loop, the server's CPU, the ledger's
 * growth, the trend lag; on 'finish' closes the server (`finish`: the catch-up figure, when there is one) and
 * answers the report.
 */
async function serveMeasured(
  db: Db,
  tenants: number,
  ledgerTables: string,
  /** Whether what the warm-up wrote is written again every hour (our key sources). */
  hourly: boolean,
  announced: Announced,
  stats: Stats,
  end: { lagSeconds: () => Promise<number>; finish: () => Promise<number | null> },
): Promise<void> {
  const bytesAtStart = await tableBytes(db, ledgerTables);
  const messages: string[] = [];
  let wake = () => {};
  process.on('message', (message) => {
    messages.push(String(message));
    wake();
  });
  const next = async (expected: string) => {
    while (messages[0] !== expected) {
      if (messages.length > 0) messages.shift();
      else await new Promise<void>((resolve) => (wake = resolve));
    }
    messages.shift();
  };
  process.send!(announced);
  // Settled (see WARM_SECONDS): the flushes, then the trend lag within its bound at SETTLED_FLUSHES readings in a row.
  let lagWithin = 0;
  let reading = false;
  const settling = setInterval(() => {
    if (!stats.warming.settled || reading) return;
    reading = true;
    void end
      .lagSeconds()
      .then((lag) => {
        lagWithin = lag <= MAX_LAG_SECONDS ? lagWithin + 1 : 0;
        if (lagWithin !== SETTLED_FLUSHES) return;
        clearInterval(settling);
        process.send!({ settled: true });
      })
      .catch((error: unknown) => console.error('settling:', error))
      .finally(() => (reading = false));
  }, 1000);
  // The histogram records the time between two runs of its timer, the resolution included: at 10 ms (Node's
  // default) an idle loop read 10 ms and a 40 ms stall read up to 50. At 1 ms a reading is the stall plus at most 1 ms.
  const loop = monitorEventLoopDelay({ resolution: STALL_RESOLUTION_MS });
  if (TRACE) {
    // A thread's time on a core and waiting for one (Linux schedstat, ns), to tell work from preemption: the main
    // thread's (mainThreadSchedstat) and every busy thread's (threads, below).
    // This process' CPU (every thread) and the host's busy time, in ms (clock ticks of 10 ms), to tell who ran.
    const processMs = () => {
      const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10;
    };
    const hostBusyMs = () => {
      const cpu = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.split(/\s+/).slice(1).map(Number);
      return (cpu[0]! + cpu[1]! + cpu[2]! + cpu[5]! + cpu[6]! + cpu[7]!) * 10;
    };
    // The stall lines use the histogram's ruler (a timer every STALL_RESOLUTION_MS): a 10 ms timer did not see
    // every stall the histogram counted (60.7 ms by the histogram, none over 31 ms by the timer, in one run).
    // The /proc counters are read when a stall is seen and otherwise every COUNTERS_EVERY_MS, not at every tick, so
    // a stall's counters are those since a reading at most COUNTERS_EVERY_MS before the stall began.
    const COUNTERS_EVERY_MS = 10;
    let last = performance.now();
    // The monotonic clock in µs, the clock of V8's CPU profiles (BENCH_SCALE_PROFILE): a stall's samples are found by it.
    const monoMicros = () => process.hrtime.bigint() / 1000n;
    let lastMono = monoMicros();
    let [lastOnCpu, lastWaiting] = mainThreadSchedstat();
    let lastProcess = processMs();
    let lastHost = hostBusyMs();
    let countersAt = last;
    // Every thread of this process: its time on a core and waiting for one, and its nice value, so a stall's
    // line names the threads that had the cores (the demand's thread is the one at nice 10; the main thread's id
    // is the process id).
    // With the projections in worker processes, their threads too, each named by process and thread
    // (`<pid>/<tid>`), its nice value its session's when the thread's own is 0.
    const workerPids = [...childrenCpuMicros().keys()];
    const threads = (): Map<string, [number, number, number]> => {
      const found = new Map<string, [number, number, number]>();
      for (const pid of ['self', ...workerPids]) {
        let tids: string[];
        try {
          tids = readdirSync(`/proc/${pid}/task`);
        } catch {
          continue; // The process ended.
        }
        const sessionNice = pid === 'self' ? 0 : Number(/nice (-?\d+)/.exec(readFileSync(`/proc/${pid}/autogroup`, 'utf8'))?.[1] ?? 0);
        for (const tid of tids) {
          try {
            const [onCpu, waiting] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
            const nice = Number(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]) || sessionNice;
            found.set(pid === 'self' ? tid : `${pid}/${tid}`, [Number(onCpu), Number(waiting), nice]);
          } catch {
            // The thread ended.
          }
        }
      }
      return found;
    };
    let lastThreads = threads();
    // Read less often than the main thread's own counters (two files a thread): a stall's thread figures cover
    // it and at most THREADS_EVERY_MS before it.
    const THREADS_EVERY_MS = 100;
    let threadsAt = performance.now();
    // What PostgreSQL's sessions were running at the last look (every PG_LOOK_MS), for the stall lines.
    const PG_LOOK_MS = 200;
    let pgActive = '';
    let looking = false;
    setInterval(() => {
      if (looking) return;
      looking = true;
      void db
        .query<{ query: string }>(`SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 40) AS query FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()`)
        .then(({ rows }) => (pgActive = rows.map((row) => row.query).join(' | ')))
        .catch(() => {})
        .finally(() => (looking = false));
    }, PG_LOOK_MS).unref();
    setInterval(() => {
      const now = performance.now();
      const nowMono = monoMicros();
      const stalled = now - last > 30 + STALL_RESOLUTION_MS;
      if (stalled || now - countersAt >= COUNTERS_EVERY_MS) {
        const [onCpu, waiting] = mainThreadSchedstat();
        const process_ = processMs();
        const host = hostBusyMs();
        const threadsNow = stalled || now - threadsAt >= THREADS_EVERY_MS ? threads() : lastThreads;
        if (stalled) {
          const on = ((onCpu - lastOnCpu) / 1e6).toFixed(0);
          const off = ((waiting - lastWaiting) / 1e6).toFixed(0);
          const busiest = [...threadsNow]
            .map(([tid, [threadOn, threadWaiting, nice]]) => {
              const before = lastThreads.get(tid) ?? [threadOn, threadWaiting, nice];
              return { tid, on: (threadOn - before[0]) / 1e6, waiting: (threadWaiting - before[1]) / 1e6, nice };
            })
            .filter((thread) => thread.on >= 1 || thread.waiting >= 1)
            .sort((a, b) => b.on - a.on)
            .slice(0, 6)
            .map((thread) => `${thread.tid === String(process.pid) ? 'main' : thread.tid}${thread.nice === 0 ? '' : `(nice ${thread.nice})`} ${thread.on.toFixed(0)}/${thread.waiting.toFixed(0)}`);
          console.error(
            `stall ${(last + STALL_RESOLUTION_MS).toFixed(0)}-${now.toFixed(0)} ms: ${(now - last - STALL_RESOLUTION_MS).toFixed(0)} ms late; since the counters' last reading (at most ${COUNTERS_EVERY_MS} ms before): main thread ${on} ms on a core, ${off} ms waiting for one; this process ~${process_ - lastProcess} ms, the host ~${host - lastHost} ms busy; threads (ms on a core/waiting, since at most ${THREADS_EVERY_MS} ms before): ${busiest.join(', ')}; PostgreSQL active (at most ${PG_LOOK_MS} ms before): [${pgActive}]; monotonic ${lastMono}-${nowMono} µs`,
          );
        }
        if (threadsNow !== lastThreads) {
          lastThreads = threadsNow;
          threadsAt = now;
        }
        lastOnCpu = onCpu;
        lastWaiting = waiting;
        lastProcess = process_;
        lastHost = host;
        countersAt = now;
      }
      last = now;
      lastMono = nowMono;
    }, STALL_RESOLUTION_MS).unref();
    watchTheAdmittingThread();
    // Once a second: the trend lag; over 3 s, what PostgreSQL's sessions were doing (an open transaction with an
    // id holds every reader back: src/ledger/postgres/read.ts), to tell a slow page from a held-back one.
    let asking = false;
    setInterval(() => {
      if (asking) return;
      asking = true;
      void (async () => {
        const lag = await end.lagSeconds();
        if (lag <= 3) return;
        const { rows } = await db.query<{ pid: number; xid: string | null; age_ms: number; state: string; wait: string | null; query: string }>(
          `SELECT pid, backend_xid::text AS xid, round(extract(epoch FROM clock_timestamp() - xact_start) * 1000)::int AS age_ms, state,
                  wait_event_type || ':' || wait_event AS wait, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS query
           FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND xact_start IS NOT NULL ORDER BY xact_start`,
        );
        console.error(`lag ${performance.now().toFixed(0)} ms: ${lag} s; ${rows.map((row) => `[${row.pid} xid ${row.xid} ${row.age_ms} ms ${row.state} ${row.wait ?? ''} ${row.query}]`).join(' ')}`);
      })()
        .catch((error: unknown) => console.error('lag trace:', error))
        .finally(() => (asking = false));
    }, 1000).unref();
  }
  await next('start');
  clearInterval(settling);
  const bytesBefore = await tableBytes(db, ledgerTables);
  const startedAt = Date.now();
  const cpuBefore = process.cpuUsage();
  const childrenBefore = childrenCpuMicros();
  const mainBefore = mainThreadCpuMicros();
  // The main thread's ns runnable but not on a core (0 where schedstat is unreadable).
  const waitingBefore = mainThreadSchedstat()[1] || 0;
  const profiler = PROFILE_MAIN_DIR ? await startMainProfile() : null;
  loop.enable();
  // The histogram read and reset every quarter second: the longest stall is the longest of the quarters, and a
  // quarter over the bound is kept with its time, to be set beside the machine's pauses.
  let longestStallMs = 0;
  const stallsOverBound: ServerReport['stallsOverBound'] = [];
  let quarterFrom = Date.now();
  let quartersOverNearStall = 0;
  const readQuarter = () => {
    const now = Date.now();
    const ms = loop.max / 1e6;
    longestStallMs = Math.max(longestStallMs, ms);
    if (ms > NEAR_STALL_MS) quartersOverNearStall++;
    if (ms > MAX_STALL_MS && stallsOverBound.length < MAX_STALLS_KEPT) stallsOverBound.push({ fromMs: quarterFrom, toMs: now, ms: round(ms) });
    loop.reset();
    quarterFrom = now;
  };
  const quarters = setInterval(readQuarter, 250);
  stats.measuring = true;
  await next('stop');
  const elapsedSeconds = (Date.now() - startedAt) / 1000;
  stats.measuring = false;
  clearInterval(quarters);
  readQuarter();
  loop.disable();
  if (profiler !== null) await profiler.stopInto(PROFILE_MAIN_DIR!);
  const cpu = process.cpuUsage(cpuBefore);
  const childrenCpu = childrenCpuSince(childrenBefore);
  const mainCpu = mainThreadCpuMicros() - mainBefore;
  const mainWaitingMs = ((mainThreadSchedstat()[1] || 0) - waitingBefore) / 1e6;
  const lagAtEndSeconds = await end.lagSeconds();
  const grown = (await tableBytes(db, ledgerTables)) - bytesBefore;
  const hourlyBytes = hourly ? bytesBefore - bytesAtStart : 0;
  await next('finish');
  const catchUpTimesRealTime = await end.finish();
  const report: ServerReport = {
    flushes: stats.flushMs.length,
    flushP50Ms: round(percentile(stats.flushMs, 0.5)),
    flushP99Ms: round(percentile(stats.flushMs, 0.99)),
    eventLoopMaxStallMs: round(longestStallMs),
    stallsOverBound,
    quartersOverNearStall,
    mainThreadWaitingMsPerSecond: round(mainWaitingMs / elapsedSeconds),
    mergedWindows: stats.merged,
    lagAtEndSeconds: round(lagAtEndSeconds),
    summariesPerSecond: Math.round(stats.summaries / elapsedSeconds),
    serverCores: round((cpu.user + cpu.system + childrenCpu) / 1e6 / elapsedSeconds),
    workerProcessCores: round(childrenCpu / 1e6 / elapsedSeconds),
    serverNice: sessionNice(),
    serverRealtimePriority: realtimePriority(),
    mainThreadCores: Math.round((mainCpu / 1e6 / elapsedSeconds) * 100) / 100,
    mainThreadCpuMicrosPerRequest: stats.requests > 0 ? round(mainCpu / stats.requests) : 0,
    // Per summary recorded in the window, at the traffic's summaries a second (a loaded host may carry fewer:
    // the figure stays the one for N), plus the warm-up's bytes every hour.
    ledgerBytesPerSummary: stats.summaries > 0 ? Math.round((grown / stats.summaries) * 1000) / 1000 : 0,
    ledgerGbPerDay: round(((stats.summaries > 0 ? (grown / stats.summaries) * summariesOf(tenants) : grown / elapsedSeconds) * 86_400 + hourlyBytes * SOURCES_A_DAY) / 1e9),
    hourlyBytes,
    catchUpTimesRealTime: catchUpTimesRealTime === null ? null : round(catchUpTimesRealTime),
  };
  process.send!(report);
}

// ---------------------------------------------------------------------------------------------------------
// The run.

const self = fileURLToPath(import.meta.url);

/** Whether a child's message is its `{settled: true}` (settleWatch). */
function isSettled(message: unknown): boolean {
  return typeof message === 'object' && message !== null && 'settled' in message;
}

/** A run's server ended before it reported (its own fault): the run is not held, the bench goes on. */
class ServerEnded extends Error {}

/** The child's next message but `{settled}` (which `settledOf` hears). */
function nextMessage<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const heard = (message: unknown) => {
      if (isSettled(message)) return;
      child.off('message', heard);
      resolve(message as T);
    };
    child.on('message', heard);
    child.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
  });
}

/** Settles when the child says it has settled (settleWatch). */
function settledOf(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    const heard = (message: unknown) => {
      if (!isSettled(message)) return;
      child.off('message', heard);
      resolve();
    };
    child.on('message', heard);
  });
}

/** A /readyz answer: its status (0: none within 2 s) and, when not 200, the start of its body (the reason). */
interface ReadyAnswer {
  status: number;
  reason?: string;
}

async function readyzStatus(port: number): Promise<ReadyAnswer> {
  return new Promise((resolve) => {
    const req = httpRequest({ port, host: '127.0.0.1', path: '/readyz', timeout: 2_000 }, (res) => {
      const status = res.statusCode ?? 0;
      if (status === 200) {
        res.resume();
        resolve({ status });
        return;
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status, reason: body.slice(0, 200) }));
      res.on('error', () => resolve({ status, reason: body.slice(0, 200) }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 2 s')));
    req.on('error', (error) => resolve({ status: 0, reason: error.message }));
    req.end();
  });
}

/**
 * Each second's requests: the ingest tenants' two each (their own key and client address) spread evenly among
 * the admission API's batches of 100 items (50 tenants, 3 units then 10 each).
 */
function secondOfRequests(tenants: number, { token, ingestKeys }: Announced): PacedRequest[] {
  const batches: PacedRequest[] = [];
  for (let first = ingestKeys.length; first < tenants; first += ITEMS_PER_REQUEST / 2) {
    const items = [];
    for (let i = first; i < Math.min(tenants, first + ITEMS_PER_REQUEST / 2); i++) {
      items.push({ tenantId: tenantName(i), dimension: 'API_REQUESTS', units: 3 }, { tenantId: tenantName(i), dimension: 'API_REQUESTS', units: 10 });
    }
    batches.push({ method: 'POST', path: '/v1/admissions', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` }, body: JSON.stringify({ items }) });
  }
  const ingest: PacedRequest[] = [];
  ingestKeys.forEach((key, i) => {
    const headers = { 'Content-Type': 'application/json', 'X-Device-Key': key, 'X-Forwarded-For': `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` };
    const request: PacedRequest = { method: 'POST', path: `/v1/ingest/${tenantName(i)}`, headers, body: INGEST_BODY };
    ingest.push(request, request);
  });
  // Merged in proportion, so both doors' requests are spread over the whole second.
  const all: PacedRequest[] = [];
  let b = 0;
  let n = 0;
  while (b < batches.length || n < ingest.length) {
    if (n >= ingest.length || (b < batches.length && b / batches.length <= n / ingest.length)) all.push(batches[b++]!);
    else all.push(ingest[n++]!);
  }
  return all;
}

async function run(side: Side, tenants: number): Promise<{ result: RunResult; generatorPinned: boolean }> {
  // Ours with the service's node flags (src/gcTuning.ts), as `governance serve` starts; the baseline and the floor with node's own.
  const execArgv = [...process.execArgv, ...(side === 'ours' ? SERVICE_NODE_FLAGS : []), ...(PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : []), ...(TRACE ? ['--trace-gc-nvp'] : []), ...(process.env.BENCH_SCALE_NODE_ARGS ?? '').split(' ').filter(Boolean)];
  // The server runs in a session of its own, as a service does under systemd or in a container. On Linux the
  // scheduler shares the cores fairly between sessions (autogroup) before threads: sharing the bench's session, the
  // server's threads competed one for one with wrk and this process, so the generator's CPU came out of the
  // server's share and its main thread waited 30-50 ms for a core at times (BENCH_SCALE_TRACE's schedstat).
  const server = fork(self, ['serve', side, String(tenants)], { execArgv, stdio: 'inherit', detached: true });
  // A server that ends before its report (a fault of its own) ends its run, not the bench: the run is not held.
  let ended: string | undefined;
  server.once('exit', (code, signal) => (ended = `the server ended (${signal ?? `exit code ${code}`}) before its report`));
  server.on('error', () => {});
  const send = (message: string) => {
    if (ended !== undefined || !server.connected) throw new ServerEnded(ended ?? 'the server closed its channel before its report');
    server.send(message);
  };
  const settled = settledOf(server);
  const announced = await nextMessage<Announced>(server);
  let stopLoad = () => {};
  const loadStopped = new Promise<void>((resolve) => (stopLoad = resolve));
  const scripts = mkdtempSync(join(tmpdir(), 'bench-scale-'));
  // wrk starts its schedule at the next whole second and runs until a second after the traffic measured.
  const loadStartedAt = Date.now();
  const loadDone = pacedHttpLoad({
    url: `http://127.0.0.1:${announced.port}`,
    requests: secondOfRequests(tenants, announced),
    spreadMs: SPREAD_MS,
    offsetMs: OFFSET_MS,
    connections: CONNECTIONS,
    seconds: MAX_WARM_SECONDS + SECONDS + 3,
    script: join(scripts, 'scale.lua'),
    core: 1,
    stop: loadStopped,
  });
  loadDone.catch(() => {});
  // The machine's probe starts with the load, not with the measured window: a node process' start takes a core
  // for 100 ms or more on a slower host, and started at the window's first second it was the run's one stall over
  // the bound (52.9 ms, the admitting thread 41 ms waiting for a core; bench/RESULTS.md, 2026-12-06 05:48). It
  // answers only the pauses inside the window.
  const hostProbe = probeHostPauses();
  try {
    await new Promise((resolve) => setTimeout(resolve, (WARM_SECONDS + 1) * 1000));
    // The cap's timer is cleared once settled: a pending one would hold the process open at the end (--quick).
    let capTimer: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise((resolve) => (capTimer = setTimeout(resolve, loadStartedAt + MAX_WARM_SECONDS * 1000 - Date.now())))]);
    clearTimeout(capTimer);
    const warmUpSeconds = Math.round((Date.now() - loadStartedAt) / 100) / 10;
    send('start');
    const postgresBefore = postgresCpuMicros();
    const startedAt = Date.now();
    // /readyz asked once a second on the run's clock (an answer that is slow does not delay the next question).
    const answers: Promise<ReadyAnswer>[] = [];
    for (let second = 1; second <= SECONDS; second++) {
      await new Promise((resolve) => setTimeout(resolve, startedAt + second * 1000 - Date.now()));
      answers.push(readyzStatus(announced.port));
    }
    const postgresCores = (postgresCpuMicros() - postgresBefore) / 1e6 / ((Date.now() - startedAt) / 1000);
    send('stop');
    const stoppedAt = Date.now();
    const probed = hostProbe.stop(startedAt, stoppedAt);
    const hostPauses = machinePauses(probed);
    const steals = coreSteals(probed);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    stopLoad();
    const readyAnswers = await Promise.all(answers);
    const readySamples = readyAnswers.length;
    // Which second of the measured window each answer other than 200 came in, and why.
    const readyFailuresAt = readyAnswers.flatMap((answer, index) => (answer.status === 200 ? [] : [{ second: index + 1, ...answer }]));
    const readyFailures = readyFailuresAt.length;
    const load = await loadDone;
    rmSync(scripts, { recursive: true, force: true });
    const reportDone = nextMessage<ServerReport>(server);
    send('finish');
    const report = await reportDone.catch((error: unknown) => {
      throw new ServerEnded(ended ?? String(error));
    });
    // Each child ends on its own once disconnected (a profiled server writes its profile then); killed after 10 s.
    if (server.connected) server.disconnect();
    if (server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      if ((await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('late'), 10_000))])) === 'late') server.kill();
    }
    const unexpected = Object.entries(load.statuses).filter(([status]) => !['200', '202', '429'].includes(status));
    if (unexpected.length > 0 || load.errors > 0) console.error(`load: ${load.errors} socket errors, unexpected answers ${JSON.stringify(Object.fromEntries(unexpected))}`);
    const result: RunResult = {
      side,
      tenants,
      ingestTenants: announced.ingestKeys.length,
      held: false,
      missed: [],
      ...report,
      readySamples,
      readyFailures,
      readyFailuresAt,
      postgresCores: round(postgresCores),
      statuses: load.statuses,
      loadErrors: load.errors + unexpected.reduce((sum, [, count]) => sum + count, 0),
      loadLateRequests: load.late,
      generatorCores: Math.round((load.generatorCpuMicros / 1e6 / (load.requests / load.requestsPerSecond)) * 100) / 100,
      warmUpSeconds,
      loadAverage: round(loadavg()[0]!),
      hostPauses: hostPauses.length,
      hostPauseLongestMs: longestPauseMs(hostPauses),
      stallsOverBoundOnHostPause: report.stallsOverBound.filter((stall) => hostPauses.some((pause) => overlaps(pause, stall))).length,
      coreSteals: steals.length,
      coreStealLongestMs: longestPauseMs(steals),
      stolenMsPerMinute: Math.round(stolenMs(probed) / ((stoppedAt - startedAt) / 60_000)),
      stallsOverBoundOnCoreSteal: report.stallsOverBound.filter((stall) => steals.some((steal) => overlaps(steal, stall))).length,
    };
    result.missed = missedCriteria(result);
    result.held = result.missed.length === 0;
    return { result, generatorPinned: load.pinned };
  } catch (error) {
    hostProbe.stop(0, 0);
    // The server ended mid-run: its load is stopped before the next run starts.
    if (error instanceof ServerEnded) {
      stopLoad();
      await loadDone.catch(() => {});
      rmSync(scripts, { recursive: true, force: true });
    }
    throw error;
  }
}

/** Whether a pause (or a core's steal) overlapped a stall's quarter second. */
function overlaps(pause: HostPause, stall: { fromMs: number; toMs: number }): boolean {
  return pause.atMs - pause.lateMs <= stall.toMs && pause.atMs >= stall.fromMs;
}

/** The criteria a run did not meet, each with its figure (empty: held). */
function missedCriteria(result: RunResult): string[] {
  const missed: string[] = [];
  if (result.mergedWindows > 0) missed.push(`${result.mergedWindows} windows merged`);
  if (result.flushP99Ms >= MAX_FLUSH_P99_MS) missed.push(`flush p99 ${result.flushP99Ms} ms >= ${MAX_FLUSH_P99_MS} ms`);
  if (result.eventLoopMaxStallMs > MAX_STALL_MS) {
    const over = `${result.stallsOverBound.length}${result.stallsOverBound.length >= MAX_STALLS_KEPT ? ' or more' : ''}`;
    missed.push(`stall ${result.eventLoopMaxStallMs} ms > ${MAX_STALL_MS} ms (${over} over the bound, ${result.stallsOverBoundOnHostPause} of them on a pause of the machine, ${result.stallsOverBoundOnCoreSteal} on a steal of a core)`);
  }
  if (result.readyFailures > 0) missed.push(`/readyz not 200 ${result.readyFailures} times`);
  if (result.lagAtEndSeconds > MAX_LAG_SECONDS) missed.push(`trend lag ${result.lagAtEndSeconds} s > ${MAX_LAG_SECONDS} s`);
  if (result.loadErrors > 0) missed.push(`${result.loadErrors} answers other than 200/202/429`);
  const wanted = summariesOf(result.tenants);
  if (result.summariesPerSecond < wanted * 0.95) missed.push(`${result.summariesPerSecond} of ${wanted} summaries a second (< 95 %)`);
  return missed;
}

/** The host's start-time figure: the compiled service's start on PostgreSQL (median of 3), or null without dist/. */
function startTimeFigure(): unknown {
  if (QUICK || process.env.BENCH_SCALE_START_TIME === '0') return null;
  const started = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(new URL('./start-time.ts', import.meta.url))], {
    env: { ...process.env, BENCH_START_RUNS: '3' },
    encoding: 'utf8',
    timeout: 300_000,
  });
  const last = started.stdout?.trim().split('\n').at(-1);
  try {
    if (last) return JSON.parse(last);
  } catch {
    // said below
  }
  const why = (started.error?.message ?? started.stderr?.split('\n').find((line) => line.startsWith('Error')) ?? `exit ${started.status}`).trim();
  console.error(`bench/start-time.ts gave no figure (startTime null): ${why}`);
  return null;
}

async function measure(): Promise<void> {
  const loadAtStart = loadavg()[0]!;
  const results: RunResult[] = [];
  const endedRuns: { side: Side; tenants: number; ended: string }[] = [];
  const notRun: number[] = [];
  let pinned = true;
  let order: Side[] = SIDES;
  for (const tenants of SIZES) {
    // Sizes go up: past two in a row that neither side held, a larger one is not run (it would take long to say
    // no). One was the rule before: a single pause of the machine (59 ms, seen by the probe) at 10,000 failed both
    // sides on a stall and ended a ladder there.
    const sizesRun = [...new Set([...results, ...endedRuns].map((each) => each.tenants))].sort((a, b) => a - b);
    const heldNone = (size: number | undefined) => size !== undefined && !results.some((each) => each.held && each.tenants === size);
    if (!QUICK && sizesRun.length >= 2 && heldNone(sizesRun.at(-1)) && heldNone(sizesRun.at(-2))) {
      notRun.push(tenants);
      continue;
    }
    for (const side of order) {
      let ran: Awaited<ReturnType<typeof run>>;
      try {
        ran = await run(side, tenants);
      } catch (error) {
        if (!(error instanceof ServerEnded)) throw error;
        // Said as a line of its own and counted as not held; its figures are not there to report.
        console.log(JSON.stringify({ side, tenants, held: false, ended: error.message }));
        endedRuns.push({ side, tenants, ended: error.message });
        continue;
      }
      const { result, generatorPinned } = ran;
      pinned &&= generatorPinned;
      console.log(JSON.stringify(result));
      results.push(result);
    }
    order = [...order].reverse();
  }
  const largestHeld = (side: Side) => Math.max(0, ...results.filter((each) => each.side === side && each.held).map((each) => each.tenants));
  const perTenants = (side: Side) =>
    results
      .filter((each) => each.side === side)
      .map(({ side: _side, statuses: _statuses, hourlyBytes: _hourly, ledgerBytesPerSummary: _bytes, flushes: _flushes, readySamples: _samples, readyFailuresAt: _failuresAt, stallsOverBound, ...each }) => ({
        ...each,
        stallsOverBound: stallsOverBound.length,
      }));
  const ofOurs = (pick: (each: RunResult) => number | null) => Object.fromEntries(results.filter((each) => each.side === 'ours').map((each) => [each.tenants, pick(each)]));
  const ours = largestHeld('ours');
  const baseline = largestHeld('baseline');
  console.log(
    JSON.stringify({
      bench: 'scale',
      ours,
      baseline,
      ratio: baseline > 0 ? round(ours / baseline) : null,
      unit: `largest N of ${SIZES.join('/')} active tenants held for ${SECONDS} s once settled (warmUpSeconds: the traffic before, ${WARM_SECONDS}-${MAX_WARM_SECONDS} s) (no window merged, flush p99 < ${MAX_FLUSH_P99_MS} ms, no stall > ${MAX_STALL_MS} ms, /readyz 200 throughout, trend lag <= ${MAX_LAG_SECONDS} s, every answer 200/202/429, >= 95% of the summaries a second)`,
      baselineIs:
        'a bare minimum doing the same durable work: node:http reading the same requests (ingest keys in a Map), a fixed window per tenant and dimension in a Map, each second one unnest INSERT of the summaries (a row per tenant and second: the per-second demand our demand read model keeps) and one upsert of the trend minute rows',
      generator: `wrk (1 thread, ${CONNECTIONS} connections, paced by a Lua schedule: every second ${INGEST_SHARE * 100}% of the tenants 2 HTTP ingest requests each, the rest in admission API batches of ${ITEMS_PER_REQUEST} items) in a process of its own, ${pinned ? 'pinned to core 1 with taskset (the servers and PostgreSQL unpinned)' : 'unpinned'}`,
      // Each server's session's nice value asked for (every side alike; null: as started; each run's serverNice says what it got).
      serverNice: SERVER_NICE ?? null,
      // Each server's main thread's SCHED_RR priority asked for (every side alike; null: the normal policy).
      serverRealtimePriority: SERVER_REALTIME ?? null,
      ledgerGbPerDay: ofOurs((each) => each.ledgerGbPerDay),
      catchUpTimesRealTime: ofOurs((each) => each.catchUpTimesRealTime),
      warmUpSeconds: ofOurs((each) => each.warmUpSeconds),
      perTenants: perTenants('ours'),
      baselinePerTenants: perTenants('baseline'),
      ...(SIDES.includes('floor')
        ? {
            floorIs: "not a peer: node:http answering the same requests with constant answers of ours' size, nothing checked, metered or recorded (what this traffic's HTTP alone costs on the host; it never holds)",
            floorPerTenants: perTenants('floor'),
          }
        : {}),
      notRun,
      // Runs whose server ended before its report (not held; nothing measured to report).
      ended: endedRuns,
      startTime: startTimeFigure(),
      loadAverageAtStart: round(loadAtStart),
      loadAverageAtEnd: round(loadavg()[0]!),
      seconds: SECONDS,
      ingestShare: INGEST_SHARE,
      quick: QUICK,
    }),
  );
}

const [mode, ...args] = process.argv.slice(2);
// A server in a session of its own gets no signal from the terminal: a bench stopped midway ends it through the
// IPC channel (a finished one ends sooner on its own).
if (mode === 'serve') process.once('disconnect', () => setTimeout(() => process.exit(1), 10_000).unref());
// Every server's session at SERVER_NICE, as the service runs with GOVERNANCE_NICE (src/sessionPriority.ts): the
// same for each side, so none has a larger share of the cores than another.
if (mode === 'serve' && SERVER_NICE !== undefined) {
  const set = await setSessionNice(SERVER_NICE);
  if (set.refused !== undefined) console.error(`bench: the server's session stays at nice ${set.nice} (BENCH_SCALE_NICE=${SERVER_NICE} refused: ${set.refused})`);
}
// Every server's main thread under SCHED_RR at SERVER_REALTIME, as the service runs with GOVERNANCE_REALTIME_PRIORITY.
if (mode === 'serve' && SERVER_REALTIME !== undefined) {
  const set = await setRealtimePriority(SERVER_REALTIME);
  if (set.refused !== undefined) console.error(`bench: the server's main thread stays at ${set.priority ?? 'the normal policy'} (BENCH_SCALE_REALTIME=${SERVER_REALTIME} refused: ${set.refused})`);
}
if (mode === 'serve') await ({ ours: serveOurs, baseline: serveBaseline, floor: serveFloor }[args[0] as Side](Number(args[1])));
else await measure();
