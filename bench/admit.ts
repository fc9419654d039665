// Governor.admit against rate-limiter-flexible's RateLimiterMemory.consume, same keys, one core.
// 10,000 tenants, round robin, INGEST/LIVE, 1 reading per call, time advancing 1 ms every 1,000 calls.
//   ours (the headline) = the Governor as the service runs it: with a Recorder, its tallies collected and handed
//                         over once per second of traffic (Governor.flush, what its timer does each second), the
//                         flush's CPU counted. The Recorder takes each batch and counts its summaries; what the
//                         ledger does with them after (serialising, appending) is bench/ledger-append.ts's.
//   oursBare            = the Governor without a Recorder (no tallies): the decision alone, a second line.
//   oursDecisionsKept   = with a Recorder, the loop storing every decision object (a caller that keeps them).
//   baseline            = RateLimiterMemory.consume (points 2000/s per key). consume returns a promise, so it
//                         is measured fairly: calls issued in batches of 1,000 and awaited together.
// The admit loops read every decision's `admitted`, as an enforcement point does.
// Each variant runs in a process of its own (a service has one Governor; in one process V8's feedback from one
// variant's loop shaped the next one's code), started anew each round, the variants in a different order each
// round; each keeps its best round. Throughput is per CPU-second of that process (process.cpuUsage: what one
// core does when it is ours, on a host shared with other work) and, as `...Wall`, per wall-clock second.
// BENCH_CALLS (default 10,000,000 per round), BENCH_ROUNDS (default 3); BENCH_QUICK=1: 2 rounds of 2,000,000.
// Last line: JSON {bench, ours, baseline, ratio, unit, baselineIs, generator, ...}.
import { fork } from 'node:child_process';
import { constants as perfConstants, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { Governor } from '../src/governance/index.ts';
import type { AdmissionSummary, AdmitDecision, LimitSource, Recorder, TenantGovernanceRecord } from '../src/governance/index.ts';
import { round2 } from './support/rounds.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const TENANTS = 10_000;
const CALLS = Number(process.env.BENCH_CALLS ?? (QUICK ? 2_000_000 : 10_000_000));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 2 : 3));
const BATCH = 1000;
/** Calls per second of traffic: time advances 1 ms every BATCH calls. */
const CALLS_PER_SECOND = BATCH * 1000;
const VARIANTS = ['recorded', 'bare', 'kept', 'baseline'] as const;
type Variant = (typeof VARIANTS)[number];

interface Rate {
  perCpuSecond: number;
  perWallSecond: number;
}

interface VariantResult extends Rate {
  variant: Variant;
  admitted: number;
  summaries: number;
  /**
   * Young-generation collections while measuring: a few per million calls when nothing is allocated per call
   * (bare about 2; with a Recorder up to about 5, its summaries), 13 or more when V8 left part of admit's fast
   * path out of the loop and allocated each request and decision (src/governance/README.md, "Hot path").
   */
  scavenges: number;
}

async function measureAll(): Promise<void> {
  const file = fileURLToPath(import.meta.url);
  const samples = Object.fromEntries(VARIANTS.map((variant) => [variant, [] as VariantResult[]])) as Record<Variant, VariantResult[]>;
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < VARIANTS.length; i++) {
      const variant = VARIANTS[(round + i) % VARIANTS.length]!;
      const child = fork(file, ['variant', variant], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const result = await new Promise<VariantResult>((resolve, reject) => {
        child.once('message', (message) => resolve(message as VariantResult));
        child.once('exit', (code) => reject(new Error(`admit variant ${variant} exited with ${code}`)));
      });
      await new Promise((resolve) => child.once('exit', resolve));
      samples[variant].push(result);
      console.log(
        `round ${round + 1} ${variant}: ${Math.round(result.perCpuSecond).toLocaleString('en-US')} per CPU-second` +
          (variant === 'baseline' ? '' : `, ${result.scavenges} scavenges`),
      );
    }
  }
  const best = (variant: Variant) => samples[variant].reduce((a, b) => (b.perCpuSecond > a.perCpuSecond ? b : a));
  const recorded = best('recorded');
  const bare = best('bare');
  const kept = best('kept');
  const baseline = best('baseline');
  const result = {
    bench: 'admit',
    ours: Math.round(recorded.perCpuSecond),
    baseline: Math.round(baseline.perCpuSecond),
    ratio: round2(recorded.perCpuSecond / baseline.perCpuSecond),
    unit: 'admits per CPU-second, with a Recorder (tallies flushed once per second of traffic)',
    baselineIs: 'a peer: rate-limiter-flexible RateLimiterMemory.consume on the same keys (what a user would pick instead)',
    generator: 'in-process loop, one core; each variant in a process of its own, rounds alternating',
    oursBare: Math.round(bare.perCpuSecond),
    ratioBare: round2(bare.perCpuSecond / baseline.perCpuSecond),
    oursDecisionsKept: Math.round(kept.perCpuSecond),
    ratioDecisionsKept: round2(kept.perCpuSecond / baseline.perCpuSecond),
    oursWall: Math.round(recorded.perWallSecond),
    oursBareWall: Math.round(bare.perWallSecond),
    baselineWall: Math.round(baseline.perWallSecond),
    ratioWall: round2(recorded.perWallSecond / baseline.perWallSecond),
    perRound: Object.fromEntries(VARIANTS.map((variant) => [variant, samples[variant].map((each) => Math.round(each.perCpuSecond))])),
    // Per round and variant (the baseline's are not counted): see VariantResult.scavenges.
    scavengesPerRound: Object.fromEntries(VARIANTS.filter((variant) => variant !== 'baseline').map((variant) => [variant, samples[variant].map((each) => each.scavenges)])),
    recordedSummaries: recorded.summaries,
    tenants: TENANTS,
    calls: CALLS,
    rounds: ROUNDS,
    quick: QUICK,
  };
  const format = (n: number) => n.toLocaleString('en-US');
  console.log(
    `per CPU-second: Governor.admit with its Recorder ${format(result.ours)}, without ${format(result.oursBare)}; ` +
      `RateLimiterMemory.consume ${format(result.baseline)} (ratio ${result.ratio}, bare ${result.ratioBare})`,
  );
  console.log(JSON.stringify(result));
}

async function runVariant(variant: Variant): Promise<void> {
  const rate = variant === 'baseline' ? await measureBaseline() : await measureGovernor(variant);
  // Run by hand (`node --import tsx --cpu-prof bench/admit.ts variant recorded`, to profile one): printed.
  if (process.send === undefined) console.log(JSON.stringify(rate));
  else {
    process.send(rate satisfies VariantResult);
    process.disconnect();
  }
}

// A second boundary less 1 ms: the first call is at a second's first millisecond, so each second of traffic is one
// second of the clock, and each flush collects one closed second per tenant (as the service's timer, just after
// each second's end, does).
const T0 = Math.floor(Date.now() / 1000) * 1000 - 1;
const names = Array.from({ length: TENANTS }, (_, i) => `tenant-${i}`);

const limitSource: LimitSource = {
  async loadTenants(ids) {
    return new Map<string, TenantGovernanceRecord>(ids.map((id) => [id, { tenantId: id, tierId: 'standard', levels: {} }]));
  },
  async loadPlatformDefaults() {
    return {};
  },
};

class CountingRecorder implements Recorder {
  summaries = 0;
  admittedUnits = 0;
  async record(admissions: readonly AdmissionSummary[]): Promise<void> {
    this.summaries += admissions.length;
    for (const each of admissions) this.admittedUnits += each.admittedUnits;
  }
}

const start = () => ({ wall: process.hrtime.bigint(), cpu: process.cpuUsage() });

function rateOf(calls: number, started: { wall: bigint; cpu: NodeJS.CpuUsage }): Rate {
  const wallSeconds = Number(process.hrtime.bigint() - started.wall) / 1e9;
  const cpu = process.cpuUsage(started.cpu);
  return { perCpuSecond: calls / ((cpu.user + cpu.system) / 1e6), perWallSecond: calls / wallSeconds };
}

/** One second of traffic, calls [from, to): reads each decision. Returns the admitted count. */
function admitSecond(governor: Governor, from: number, to: number, firstAt: number): number {
  let at = firstAt;
  let admitted = 0;
  for (let i = from; i < to; i++) {
    if (i % BATCH === 0) at++;
    if (governor.admit({ tenant: names[i % TENANTS]!, dimension: 'INGEST', allowance: 'LIVE', units: 1, at }).admitted) admitted++;
  }
  return admitted;
}

// The caller keeps every decision object (here: the last BATCH of them), so none can be optimised away.
const kept: AdmitDecision[] = new Array<AdmitDecision>(BATCH);
function admitSecondKeeping(governor: Governor, from: number, to: number, firstAt: number): number {
  let at = firstAt;
  for (let i = from; i < to; i++) {
    if (i % BATCH === 0) at++;
    kept[i % BATCH] = governor.admit({ tenant: names[i % TENANTS]!, dimension: 'INGEST', allowance: 'LIVE', units: 1, at });
  }
  return to - from;
}

async function measureGovernor(variant: Exclude<Variant, 'baseline'>): Promise<VariantResult> {
  const recorder = variant === 'bare' ? undefined : new CountingRecorder();
  const governor = new Governor({ limitSource, recorder });
  for (const tenant of names) governor.admit({ tenant, dimension: 'INGEST', allowance: 'LIVE', units: 0, at: T0 });
  await governor.loadsSettled();
  const loop = variant === 'kept' ? admitSecondKeeping : admitSecond;
  // Traffic in seconds of CALLS_PER_SECOND calls, each followed by the flush the Governor's timer makes once a
  // second (a no-op without a Recorder), so the tallies' collection and hand-over are counted as the service pays them.
  let calls = 0;
  const run = async (count: number): Promise<number> => {
    let admitted = 0;
    for (let done = 0; done < count; done += CALLS_PER_SECOND) {
      const inThisSecond = Math.min(CALLS_PER_SECOND, count - done);
      admitted += loop(governor, calls, calls + inThisSecond, T0 + Math.floor(calls / BATCH));
      calls += inThisSecond;
      await governor.flush();
    }
    return admitted;
  };
  // JIT warm-up: three seconds of traffic, each with its flush. The flushes' first runs change field
  // representations (Unix seconds are not small integers) and deoptimize what read those fields, admit's
  // decideInto too; with one second of warm-up the measured run began with that churn (about 60 MB allocated
  // while decideInto ran unoptimized), a start-up cost a service pays once, not per second.
  await run(3_000_000);
  const summariesBefore = recorder?.summaries ?? 0;
  const scavenges = countScavenges();
  const started = start();
  const admitted = await run(CALLS);
  const rate = rateOf(CALLS, started);
  await governor.close();
  return { variant, ...rate, admitted, summaries: (recorder?.summaries ?? 0) - summariesBefore, scavenges: await scavenges.stop() };
}

/** Counts minor GCs from now until stop() (their entries arrive in a later turn of the event loop). */
function countScavenges(): { stop(): Promise<number> } {
  let count = 0;
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) count++;
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    async stop() {
      await new Promise((resolve) => setTimeout(resolve, 50));
      observer.disconnect();
      return count;
    },
  };
}

async function measureBaseline(): Promise<VariantResult> {
  const limiter = new RateLimiterMemory({ points: 2000, duration: 1 });
  const run = async (calls: number): Promise<void> => {
    for (let i = 0; i < calls; i += BATCH) {
      const batch: Promise<unknown>[] = [];
      for (let j = i; j < i + BATCH && j < calls; j++) batch.push(limiter.consume(names[j % TENANTS]!, 1));
      await Promise.allSettled(batch);
    }
  };
  const calls = Math.min(CALLS, 2_000_000);
  await run(200_000);
  const started = start();
  await run(calls);
  return { variant: 'baseline', ...rateOf(calls, started), admitted: 0, summaries: 0, scavenges: 0 };
}

// Last, so every constant above is initialised before a variant runs.
if (process.argv[2] === 'variant') await runVariant(process.argv[3] as Variant);
else await measureAll();
