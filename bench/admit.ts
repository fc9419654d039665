// Governor.admit against rate-limiter-flexible's RateLimiterMemory.consume, same keys, same run, one core.
// 10,000 tenants, round robin, INGEST/LIVE, 1 reading per call, time advancing 1 ms every 1,000 calls.
// consume returns a promise, so it is measured fairly: calls issued in batches of 1,000 and awaited together.
// The admit loop reads every decision's `admitted`, as an enforcement point does; V8 inlines admit's fast path
// there and need not allocate the request or the decision. `oursDecisionsKept` is the same loop storing every
// decision object, which forces both allocations: the figure for a caller that holds on to decisions.
// Throughput is per CPU-second of this process (process.cpuUsage: what one core does when it is ours, on a
// host shared with other work) and, as `...Wall`, per wall-clock second.
// Last line: JSON {bench, ours, baseline, ratio, unit, ...}.
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { Governor } from '../src/governance/index.ts';
import type { AdmissionSummary, AdmitDecision, LimitSource, Recorder, TenantGovernanceRecord } from '../src/governance/index.ts';

const TENANTS = 10_000;
const CALLS = Number(process.env.BENCH_CALLS ?? 10_000_000);
const BATCH = 1000;
const T0 = Date.now();
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

async function warmGovernor(recorder?: Recorder): Promise<Governor> {
  const governor = new Governor({ limitSource, recorder });
  for (const tenant of names) governor.admit({ tenant, dimension: 'INGEST', allowance: 'LIVE', units: 0, at: T0 });
  await governor.loadsSettled();
  return governor;
}

interface Rate {
  perCpuSecond: number;
  perWallSecond: number;
}

function measure(calls: number, started: { wall: bigint; cpu: NodeJS.CpuUsage }): Rate {
  const wallSeconds = Number(process.hrtime.bigint() - started.wall) / 1e9;
  const cpu = process.cpuUsage(started.cpu);
  return { perCpuSecond: calls / ((cpu.user + cpu.system) / 1e6), perWallSecond: calls / wallSeconds };
}

const start = () => ({ wall: process.hrtime.bigint(), cpu: process.cpuUsage() });

let admittedSeen = 0;

// The caller reads each decision, as an enforcement point does.
function runGovernor(governor: Governor, calls: number): Rate {
  let at = T0;
  let admitted = 0;
  const started = start();
  for (let i = 0; i < calls; i++) {
    if (i % BATCH === 0) at++;
    if (governor.admit({ tenant: names[i % TENANTS]!, dimension: 'INGEST', allowance: 'LIVE', units: 1, at }).admitted) admitted++;
  }
  admittedSeen += admitted;
  return measure(calls, started);
}

// The same loop for the Governor with a Recorder. A loop of its own, as an enforcement point has one Governor:
// the loop above was optimised for a Governor that counts nothing, and reusing it here measured V8 undoing
// that (a deoptimisation and code tuned for both), not what a counting Governor costs.
function runRecordingGovernor(governor: Governor, calls: number): Rate {
  let at = T0;
  let admitted = 0;
  const started = start();
  for (let i = 0; i < calls; i++) {
    if (i % BATCH === 0) at++;
    if (governor.admit({ tenant: names[i % TENANTS]!, dimension: 'INGEST', allowance: 'LIVE', units: 1, at }).admitted) admitted++;
  }
  admittedSeen += admitted;
  return measure(calls, started);
}

// The caller keeps every decision object (here: the last BATCH of them), so none can be optimised away.
const kept: AdmitDecision[] = new Array<AdmitDecision>(BATCH);
function runGovernorKeepingDecisions(governor: Governor, calls: number): Rate {
  let at = T0;
  const started = start();
  for (let i = 0; i < calls; i++) {
    if (i % BATCH === 0) at++;
    kept[i % BATCH] = governor.admit({ tenant: names[i % TENANTS]!, dimension: 'INGEST', allowance: 'LIVE', units: 1, at });
  }
  return measure(calls, started);
}

async function runBaseline(calls: number): Promise<Rate> {
  const limiter = new RateLimiterMemory({ points: 2000, duration: 1 });
  const started = start();
  for (let i = 0; i < calls; i += BATCH) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < i + BATCH && j < calls; j++) batch.push(limiter.consume(names[j % TENANTS]!, 1));
    await Promise.allSettled(batch);
  }
  return measure(calls, started);
}

const plain = await warmGovernor();
runGovernor(plain, 1_000_000); // JIT warm-up
const ours = runGovernor(plain, CALLS);
await plain.close();

const keeping = await warmGovernor();
runGovernorKeepingDecisions(keeping, 1_000_000);
const oursKeeping = runGovernorKeepingDecisions(keeping, CALLS);
await keeping.close();

const recorder = new CountingRecorder();
const recording = await warmGovernor(recorder);
runRecordingGovernor(recording, 1_000_000);
const withRecording = runRecordingGovernor(recording, CALLS);
await recording.close();

const baselineCalls = Math.min(CALLS, 2_000_000);
await runBaseline(200_000);
const baseline = await runBaseline(baselineCalls);

const result = {
  bench: 'admit',
  ours: Math.round(ours.perCpuSecond),
  baseline: Math.round(baseline.perCpuSecond),
  ratio: Number((ours.perCpuSecond / baseline.perCpuSecond).toFixed(2)),
  unit: 'admits per CPU-second',
  tenants: TENANTS,
  calls: CALLS,
  oursWithRecording: Math.round(withRecording.perCpuSecond),
  ratioWithRecording: Number((withRecording.perCpuSecond / baseline.perCpuSecond).toFixed(2)),
  oursDecisionsKept: Math.round(oursKeeping.perCpuSecond),
  ratioDecisionsKept: Number((oursKeeping.perCpuSecond / baseline.perCpuSecond).toFixed(2)),
  oursWall: Math.round(ours.perWallSecond),
  oursWithRecordingWall: Math.round(withRecording.perWallSecond),
  baselineWall: Math.round(baseline.perWallSecond),
  ratioWall: Number((ours.perWallSecond / baseline.perWallSecond).toFixed(2)),
  baselineCalls,
  recordedSummaries: recorder.summaries,
  admittedSeen,
};
const format = (n: number) => n.toLocaleString('en-US');
console.log(
  `per CPU-second: Governor.admit ${format(result.ours)}, with recording ${format(result.oursWithRecording)}; ` +
    `RateLimiterMemory.consume ${format(result.baseline)} (wall clock: ${format(result.oursWall)} / ${format(result.baselineWall)})`,
);
console.log(JSON.stringify(result));
