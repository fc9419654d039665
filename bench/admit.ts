// Governor.admit against rate-limiter-flexible's RateLimiterMemory.consume, same keys, same run, one core.
// 10,000 tenants, round robin, INGEST/LIVE, 1 reading per call, time advancing 1 ms every 1,000 calls.
// consume returns a promise, so it is measured fairly: calls issued in batches of 1,000 and awaited together.
// Last line: JSON {bench, ours, baseline, ratio, unit, ...}.
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { Governor } from '../src/governance/governor.ts';
import type { AdmissionSummary, LimitSource, Recorder, TenantGovernanceRecord } from '../src/governance/types.ts';

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

function runGovernor(governor: Governor, calls: number): { perSecond: number; admitted: number } {
  let admitted = 0;
  let at = T0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    if (i % BATCH === 0) at++;
    if (governor.admit({ tenant: names[i % TENANTS]!, dimension: 'INGEST', allowance: 'LIVE', units: 1, at }).admitted) admitted++;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { perSecond: calls / seconds, admitted };
}

async function runBaseline(calls: number): Promise<number> {
  const limiter = new RateLimiterMemory({ points: 2000, duration: 1 });
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i += BATCH) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < i + BATCH && j < calls; j++) batch.push(limiter.consume(names[j % TENANTS]!, 1));
    await Promise.allSettled(batch);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return calls / seconds;
}

const plain = await warmGovernor();
runGovernor(plain, 1_000_000); // JIT warm-up
const ours = runGovernor(plain, CALLS);
await plain.close();

const recorder = new CountingRecorder();
const recording = await warmGovernor(recorder);
runGovernor(recording, 1_000_000);
const withRecording = runGovernor(recording, CALLS);
await recording.close();

const baselineCalls = Math.min(CALLS, 2_000_000);
await runBaseline(200_000);
const baseline = await runBaseline(baselineCalls);

const result = {
  bench: 'admit',
  ours: Math.round(ours.perSecond),
  baseline: Math.round(baseline),
  ratio: Number((ours.perSecond / baseline).toFixed(2)),
  unit: 'admits/s',
  tenants: TENANTS,
  calls: CALLS,
  oursWithRecording: Math.round(withRecording.perSecond),
  ratioWithRecording: Number((withRecording.perSecond / baseline).toFixed(2)),
  baselineCalls,
  recordedSummaries: recorder.summaries,
};
console.log(`Governor.admit ${result.ours.toLocaleString('en-US')}/s, with recording ${result.oursWithRecording.toLocaleString('en-US')}/s; RateLimiterMemory.consume ${result.baseline.toLocaleString('en-US')}/s`);
console.log(JSON.stringify(result));
