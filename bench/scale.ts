// Real-time capacity: the real Governor -> ledger Recorder -> PostgreSQL EventStore -> admission-trends
// projection, with N active tenants each admitting and shedding every second, for BENCH_SCALE_SECONDS (default
// 20) at each N of BENCH_SCALE_TENANTS (default 1000,10000,50000), each on a fresh schema.
//
// Per N: flush p50/p99 (the Recorder's record() call: what the Governor waits for), the longest event-loop
// stall seen (monitorEventLoopDelay; a flush must never block it > 50 ms), windows merged (a summary covering
// more than one second: the Recorder was too slow for the Governor's tick), and the admission-trends lag at
// the end (the age of its oldest unapplied event), and the cores this process and PostgreSQL used meanwhile
// (on 2 cores, what is left for anything else), what the ledger's tables grew by (as GB per day), and then the
// trend projection's catch-up rate: the run's summaries replayed into emptied trend tables. N is held in real time when no window merged, no flush blocked the loop > 50 ms, /readyz stayed ready, the flush
// p99 is under 500 ms and the lag at the end is at most 5 s.
//
// ours: the largest N held, the trend projection in a worker thread as the service runs it on PostgreSQL.
// baseline: the largest N held by the same pipeline with the projection in the admitting thread (the service
// with GOVERNANCE_PROJECTION_WORKERS=off), in the same run. Bounded: about
// 2 x (number of N) x (BENCH_SCALE_SECONDS + set-up) seconds. Last line: JSON.
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { admissionTrendsProjection } from '../projections/admissionTrends.ts';
import { projectionWorkers } from '../projections/workerProjections.ts';
import { Governor } from '../src/governance/index.ts';
import type { AdmissionSummary, LimitSource, Recorder, TenantGovernanceRecord, UnresolvedAdmissionSummary } from '../src/governance/index.ts';
import { createLedgerRecorder } from '../src/ledger/ledgerRecorder.ts';
import { startProjections } from '../src/ledger/projectionSet.ts';
import { rebuildProjection } from '../src/ledger/rebuild.ts';
import type { Db } from '../src/db/db.ts';
import { projectionReadiness } from '../src/ledger/projectionReadiness.ts';
import { processCpuMicros } from '../test/support/replicas.ts';
import { withBenchLedger } from './support/benchSchema.ts';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
// BENCH_QUICK=1: 10 s at 1,000 tenants, to prove the bench runs. The target run (issue 20, a quiet machine):
// BENCH_SCALE_SECONDS=180 npx tsx bench/scale.ts
const QUICK = process.env.BENCH_QUICK === '1';
const SECONDS = Number(process.env.BENCH_SCALE_SECONDS ?? (QUICK ? 10 : 20));
const SIZES = (process.env.BENCH_SCALE_TENANTS ?? (QUICK ? '1000' : '1000,10000,50000')).split(',').map(Number);
const MAX_LAG_SECONDS = 5;
const CATCH_UP = process.env.BENCH_SCALE_CATCHUP !== '0';
const MAX_FLUSH_P99_MS = 500;
const MAX_FLUSH_BLOCK_MS = 50;
// /readyz's projection check with the service's default bound (GOVERNANCE_READY_MAX_LAG_SECONDS).
const READY_MAX_LAG_SECONDS = 30;

interface RunResult {
  tenants: number;
  held: boolean;
  flushes: number;
  flushP50Ms: number;
  flushP99Ms: number;
  eventLoopMaxStallMs: number;
  /** The longest event-loop block seen while a flush was under way (a 5 ms timer's drift). */
  flushBlockMaxMs: number;
  mergedWindows: number;
  /** /readyz's projection check, sampled every second: how many samples answered not ready. */
  readySamples: number;
  readyFailures: number;
  lagAtEndSeconds: number;
  entriesPerSecond: number;
  /** What the ledger's tables grew by while traffic ran, per day at that rate. */
  ledgerGbPerDay: number;
  /**
   * The trend projection's catch-up: the run's summaries replayed into emptied trend tables (a rebuild, the same
   * pages a projection that fell behind applies), in summaries per second and in multiples of real time at N.
   * Skipped (null) with BENCH_SCALE_CATCHUP=0.
   */
  catchUpEntriesPerSecond: number | null;
  catchUpTimesRealTime: number | null;
  /** CPU (cores) used by this process and by every PostgreSQL process while traffic ran. */
  nodeCores: number;
  postgresCores: number;
}

/** User + system CPU of every PostgreSQL server process (this machine's, read from /proc), in microseconds. */
function postgresCpuMicros(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith('postgres')) continue;
      total += processCpuMicros(Number(entry));
    } catch {
      // The process ended meanwhile.
    }
  }
  return total;
}

/** Bytes of the ledger's tables (every partition of gl_events, with their indexes and TOAST) in this schema. */
async function ledgerBytes(db: Db): Promise<number> {
  const { rows } = await db.query<{ bytes: string }>(
    `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::text AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'gl\\_events%'`,
  );
  return Number(rows[0]!.bytes);
}

/** Admission summaries in the ledger: the rows of every AdmissionsRecorded event's table. */
async function ledgerSummaries(db: Db): Promise<number> {
  const { rows } = await db.query<{ summaries: string }>(
    `SELECT COALESCE(sum(jsonb_array_length(COALESCE(data->'rows', data->'entries'))), 0)::text AS summaries FROM gl_events WHERE type = 'AdmissionsRecorded'`,
  );
  return Number(rows[0]!.summaries);
}

function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

const round = (value: number) => Math.round(value * 10) / 10;

async function run(tenants: number, inWorker: boolean): Promise<RunResult> {
  const projection = admissionTrendsProjection;
  return withBenchLedger(url, 6, async (db, store, schema) => {
    const names = Array.from({ length: tenants }, (_, i) => `tenant-${i}`);
    // A small ceiling: each second's first request fits, the second is shed.
    const record = (tenantId: string): TenantGovernanceRecord => ({
      tenantId,
      tierId: 'standard',
      levels: { INGEST: { override: { ratePerSecond: 5, burst: 5 } } },
    });
    const limitSource: LimitSource = {
      loadTenants: async (ids) => new Map(ids.map((id) => [id, record(id)])),
      loadPlatformDefaults: async () => ({}),
    };
    const ledger = createLedgerRecorder(store);
    const flushMs: number[] = [];
    let flushing = 0;
    let flushBlockMaxMs = 0;
    let mergedWindows = 0;
    let entries = 0;
    const timed: Recorder = {
      async record(admissions: readonly AdmissionSummary[], unresolved: readonly UnresolvedAdmissionSummary[], id?: string) {
        const started = performance.now();
        flushing++;
        try {
          await ledger.record(admissions, unresolved, id);
        } finally {
          flushing--;
          flushMs.push(performance.now() - started);
        }
        entries += admissions.length;
        for (const summary of admissions) if (summary.seconds > 1) mergedWindows++;
      },
    };
    const governor = new Governor({ limitSource, recorder: timed, onError: (error) => console.error('governor:', error) });
    const projections = await startProjections(db, store, [projection], {
      workers: inWorker ? projectionWorkers({ connectionString: url, schema }) : undefined,
      onError: (error) => console.error('projection:', error),
    });
    // Teach the Governor every tenant's ceiling before the clock starts.
    for (const tenant of names) governor.admit({ tenant, dimension: 'INGEST', allowance: 'LIVE', units: 0, at: Date.now() });
    await governor.loadsSettled();
    await governor.flush();
    flushMs.length = 0;
    mergedWindows = 0;
    entries = 0;
    flushBlockMaxMs = 0;

    // A timer every 5 ms: how late it fires while a flush is under way is how long something held the
    // loop then (the traffic below is generated in slices of a few ms, so it does not count much).
    let probeAt = performance.now();
    const probe = setInterval(() => {
      const now = performance.now();
      if (flushing > 0) flushBlockMaxMs = Math.max(flushBlockMaxMs, now - probeAt - 5);
      probeAt = now;
    }, 5);
    const ready = projectionReadiness(() => projections.lag(), READY_MAX_LAG_SECONDS);
    let readySamples = 0;
    let readyFailures = 0;
    const readyTimer = setInterval(() => {
      void ready().then(
        (reason) => {
          readySamples++;
          if (reason !== null) readyFailures++;
        },
        () => {
          readySamples++;
          readyFailures++;
        },
      );
    }, 1000);

    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const startedAt = Date.now();
    const nodeCpuBefore = process.cpuUsage();
    const postgresCpuBefore = postgresCpuMicros();
    const ledgerBytesBefore = await ledgerBytes(db);
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const roundAt = Date.now();
        // In slices of 2,500 tenants a turn, as requests would arrive over the second, each stamped with the
        // time it is decided at, as a door does (a slice stamped with the round's start but decided after the
        // next second's flush began would land in a closed second: windows merged by the bench, not the ledger).
        const slice = (from: number) => {
          const at = Date.now();
          for (const tenant of names.slice(from, from + 2_500)) {
            governor.admit({ tenant, dimension: 'INGEST', allowance: 'LIVE', units: 3, at });
            governor.admit({ tenant, dimension: 'INGEST', allowance: 'LIVE', units: 10, at });
          }
          if (from + 2_500 < names.length) setImmediate(() => slice(from + 2_500));
        };
        slice(0);
        if (roundAt - startedAt >= SECONDS * 1000) {
          clearInterval(timer);
          resolve();
        }
      }, 1000);
    });
    const elapsedMicros = (Date.now() - startedAt) * 1000;
    const nodeCpu = process.cpuUsage(nodeCpuBefore);
    const postgresCpu = postgresCpuMicros() - postgresCpuBefore;
    loop.disable();
    clearInterval(probe);
    clearInterval(readyTimer);
    const lag = (await projections.lag())[0]!;
    const ledgerBytesGrown = (await ledgerBytes(db)) - ledgerBytesBefore;
    const result: RunResult = {
      tenants,
      held: false,
      flushes: flushMs.length,
      flushP50Ms: round(percentile(flushMs, 0.5)),
      flushP99Ms: round(percentile(flushMs, 0.99)),
      eventLoopMaxStallMs: round(loop.max / 1e6),
      flushBlockMaxMs: round(flushBlockMaxMs),
      mergedWindows,
      readySamples,
      readyFailures,
      lagAtEndSeconds: round(lag.secondsBehind),
      entriesPerSecond: Math.round(entries / SECONDS),
      ledgerGbPerDay: round((ledgerBytesGrown * (86_400_000_000 / elapsedMicros)) / 1e9),
      catchUpEntriesPerSecond: null,
      catchUpTimesRealTime: null,
      nodeCores: round((nodeCpu.user + nodeCpu.system) / elapsedMicros),
      postgresCores: round(postgresCpu / elapsedMicros),
    };
    result.held = result.flushes >= SECONDS / 2 && result.mergedWindows === 0 && result.flushP99Ms < MAX_FLUSH_P99_MS && result.lagAtEndSeconds <= MAX_LAG_SECONDS &&
      result.flushBlockMaxMs <= MAX_FLUSH_BLOCK_MS && result.readyFailures === 0;
    await governor.close().catch(() => {});
    await projections.close();
    if (CATCH_UP) {
      const summaries = await ledgerSummaries(db);
      const startedRebuild = performance.now();
      await rebuildProjection(db, store, admissionTrendsProjection);
      result.catchUpEntriesPerSecond = Math.round(summaries / ((performance.now() - startedRebuild) / 1000));
      result.catchUpTimesRealTime = round(result.catchUpEntriesPerSecond / tenants);
    }
    return result;
  });
}

const load = loadavg()[0]!;
const ours: RunResult[] = [];
const baseline: RunResult[] = [];
for (const tenants of SIZES) {
  const inWorker = await run(tenants, true);
  console.log(JSON.stringify({ variant: 'worker thread', ...inWorker }));
  ours.push(inWorker);
  // BENCH_SCALE_BASELINE=0 skips the baseline (when profiling ours).
  if (process.env.BENCH_SCALE_BASELINE === '0') continue;
  const inThisThread = await run(tenants, false);
  console.log(JSON.stringify({ variant: 'admitting thread', ...inThisThread }));
  baseline.push(inThisThread);
}
const largestHeld = (results: readonly RunResult[]) => Math.max(0, ...results.filter((each) => each.held).map((each) => each.tenants));
const oursHeld = largestHeld(ours);
const baselineHeld = largestHeld(baseline);
console.log(
  JSON.stringify({
    bench: 'scale',
    ours: oursHeld,
    baseline: baselineHeld,
    ratio: baselineHeld > 0 ? round(oursHeld / baselineHeld) : null,
    unit: `active tenants held in real time (no window merged, flush p99 < ${MAX_FLUSH_P99_MS} ms, no flush blocking the loop > ${MAX_FLUSH_BLOCK_MS} ms, /readyz ready throughout, trend lag <= ${MAX_LAG_SECONDS} s after ${SECONDS} s)`,
    baselineIs: 'the same pipeline with the admission-trends projection in the admitting thread (GOVERNANCE_PROJECTION_WORKERS=off)',
    perTenants: ours.map(({ tenants, flushP99Ms, flushP50Ms, lagAtEndSeconds, eventLoopMaxStallMs, flushBlockMaxMs, mergedWindows, readyFailures, nodeCores, postgresCores, ledgerGbPerDay, catchUpEntriesPerSecond, catchUpTimesRealTime }) => ({
      tenants,
      flushP50Ms,
      flushP99Ms,
      lagAtEndSeconds,
      eventLoopMaxStallMs,
      flushBlockMaxMs,
      mergedWindows,
      readyFailures,
      nodeCores,
      postgresCores,
      ledgerGbPerDay,
      catchUpEntriesPerSecond,
      catchUpTimesRealTime,
    })),
    baselinePerTenants: baseline.map(({ tenants, flushP99Ms, lagAtEndSeconds, mergedWindows }) => ({ tenants, flushP99Ms, lagAtEndSeconds, mergedWindows })),
    loadAverageAtStart: round(load),
    seconds: SECONDS,
  }),
);
