// Run by recordedAdmit.allocation.test.ts as a process of its own, as bench/admit.ts runs the Governor (node
// --import tsx: vitest's module transform would change the code V8 compiles, and with it what it inlines).
// node --allow-natives-syntax: the warm-up lasts until V8 has optimised the loop (%GetOptimizationStatus), and a
// phase starts only while the functions it runs hot are still optimised after the collection that marks its start.
// The Governor as the service runs it, with a Recorder, its tallies flushed once per second of traffic; a loop
// that reads each decision's `admitted`, as an enforcement point does. For each phase, the young-generation
// collections (scavenges) while it ran: an admit that allocates its request or decision (about 100 bytes a
// call) makes dozens in a phase, one that allocates nothing per call none or one or two (the summaries the flushes
// hand over, a few kB a second of traffic). Prints one JSON line.
import { constants as perfConstants, PerformanceObserver } from 'node:perf_hooks';
import { Governor } from '../../../src/governance/index.ts';
import type { AdmissionSummary, LimitSource, Recorder, TenantGovernanceRecord } from '../../../src/governance/index.ts';

const TENANTS = 100;
/** Calls per ms of traffic: one per tenant, so a tenant at the shipped INGEST rate (1,000/s) is always admitted. */
const CALLS_PER_MS = TENANTS;
const CALLS_PER_SECOND = CALLS_PER_MS * 1000;
const PHASE_CALLS = Number(process.argv[2] ?? 3_000_000);
const admittedNames = Array.from({ length: TENANTS }, (_, i) => `admitted-${i}`);
// At 10 readings a second each, 99 of 100 of their calls are refused (shed): the refusal's path.
const refusedNames = Array.from({ length: TENANTS }, (_, i) => `refused-${i}`);

const limitSource: LimitSource = {
  async loadTenants(ids) {
    return new Map<string, TenantGovernanceRecord>(
      ids.map((id) => [id, { tenantId: id, tierId: 'standard', levels: id.startsWith('refused-') ? { INGEST: { tier: { ratePerSecond: 10, burst: 10 } } } : {} }]),
    );
  },
  async loadPlatformDefaults() {
    return {};
  },
};

class SummingRecorder implements Recorder {
  admittedUnits = 0;
  shedUnits = 0;
  async record(admissions: readonly AdmissionSummary[]): Promise<void> {
    for (const each of admissions) {
      this.admittedUnits += each.admittedUnits;
      this.shedUnits += each.shedUnits;
    }
  }
}

function admitSecond(governor: Governor, names: readonly string[], from: number, to: number, firstAt: number): number {
  let at = firstAt;
  let admitted = 0;
  for (let i = from; i < to; i++) {
    if (i % CALLS_PER_MS === 0) at++;
    if (governor.admit({ tenant: names[i % TENANTS]!, dimension: 'INGEST', allowance: 'LIVE', units: 1, at }).admitted) admitted++;
  }
  return admitted;
}

const T0 = Math.floor(Date.now() / 1000) * 1000 - 1;
const recorder = new SummingRecorder();
const governor = new Governor({ limitSource, recorder });
for (const tenant of [...admittedNames, ...refusedNames]) governor.admit({ tenant, dimension: 'INGEST', allowance: 'LIVE', units: 0, at: T0 });
await governor.loadsSettled();

let calls = 0;
async function run(names: readonly string[], count: number): Promise<number> {
  let admitted = 0;
  for (let done = 0; done < count; done += CALLS_PER_SECOND) {
    const inThisSecond = Math.min(CALLS_PER_SECOND, count - done);
    admitted += admitSecond(governor, names, calls, calls + inThisSecond, T0 + Math.floor(calls / CALLS_PER_MS));
    calls += inThisSecond;
    await governor.flush();
  }
  return admitted;
}

let scavenges = 0;
let gcEntries = 0;
const observer = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcEntries++;
    if ((entry as unknown as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
  }
});
observer.observe({ entryTypes: ['gc'] });
/**
 * Waits until every collection so far has been reported: GC entries arrive in a later turn of the event loop,
 * in order, so once the entry of a collection forced now (node --expose-gc) has arrived, every earlier one has.
 */
async function gcEntriesDelivered(): Promise<void> {
  const seen = gcEntries;
  (globalThis as unknown as { gc: () => void }).gc();
  const deadline = performance.now() + 30_000;
  while (gcEntries === seen) {
    if (performance.now() > deadline) throw new Error('the forced collection was never reported');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
/**
 * Warm-ups a phase may need before the collection that marks its start leaves its functions optimised (one in
 * every run so far). A count, not a time: a deadline of its own would have to stay under the test's timeout to be
 * seen, and a warm-up has its own (60 s).
 */
const MAX_WARM_UPS = 5;
/**
 * Scavenges while the phase ran, from a steady state: the collection forced to count from a known point can itself
 * deoptimise code (V8 drops optimised code that embeds an object the collection found dead: "weak objects"), so
 * after it the phase's functions must still be optimised, or the warm-up runs again and a new point is taken.
 * Their statuses at the phase's start and end go into the result: a phase that allocated says what V8 ran.
 */
async function scavengesDuring(phase: Phased): Promise<{ scavenges: number; admitted: number; recordedAdmitted: number; recordedShed: number; statusAtStart: Statuses; statusAtEnd: Statuses }> {
  for (let warmUps = 1; ; warmUps++) {
    await warmUp(phase.names, phase.hot);
    await gcEntriesDelivered();
    if (allOptimised(phase.hot)) break;
    if (warmUps === MAX_WARM_UPS) throw new Error(`each of ${MAX_WARM_UPS} forced collections deoptimised the phase's functions: ${JSON.stringify(statusesOf(phase.hot))}`);
  }
  const statusAtStart = statusesOf(phase.hot);
  const before = scavenges;
  const { admittedUnits, shedUnits } = recorder;
  const admitted = await run(phase.names, PHASE_CALLS);
  const statusAtEnd = statusesOf(phase.hot);
  await gcEntriesDelivered();
  const phaseScavenges = scavenges - before;
  await governor.flush();
  return { scavenges: phaseScavenges, admitted, recordedAdmitted: recorder.admittedUnits - admittedUnits, recordedShed: recorder.shedUnits - shedUnits, statusAtStart, statusAtEnd };
}

/** Until the clock's next second has begun and the Tallies' tick after it (20 ms in) has had time to run. */
function pastNextSecond(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 100));
}
/** V8's optimisation status of a function (node --allow-natives-syntax), one bit of it: optimised by TurboFan. */
const optimisationStatus = new Function('f', 'return %GetOptimizationStatus(f)') as (f: unknown) => number;
const TURBOFANNED = 1 << 6;
const MARKED_FOR_DEOPTIMIZATION = 1 << 14;
type Statuses = Record<string, number>;
/** The functions a phase runs hot, by name: admit's loop, decideInto, and for refusals refuseFast (out of line). */
type Hot = Record<string, unknown>;
interface Phased {
  names: readonly string[];
  hot: Hot;
}
function statusesOf(hot: Hot): Statuses {
  return Object.fromEntries(Object.entries(hot).map(([name, f]) => [name, optimisationStatus(f)]));
}
function allOptimised(hot: Hot): boolean {
  return Object.values(hot).every((f) => {
    const status = optimisationStatus(f);
    return (status & TURBOFANNED) !== 0 && (status & MARKED_FOR_DEOPTIMIZATION) === 0;
  });
}
/** A warm-up run before a clock boundary: five seconds of traffic and 25 ms more. */
const BOUNDARY_RUN_CALLS = 5 * CALLS_PER_SECOND + 25 * CALLS_PER_MS;
const governorMethods = Governor.prototype as unknown as Record<string, unknown>;
const admittedHot: Hot = { admitSecond, decideInto: governorMethods.decideInto };
const refusedHot: Hot = { ...admittedHot, refuseFast: governorMethods.refuseFast };
/**
 * Runs `names` across two seconds of the clock, as the service meets them, then until V8 runs admit's loop and
 * decideInto optimised. At a second of the clock the Governor starts a new fast-path epoch (readClock), so each
 * tenant's next call takes the full path; the Tallies' tick collects, disarming the cells that counted nothing
 * since the last flush, so their next admission is tallied out of line (tallyFastAdmission). Each run ends 25 ms of
 * traffic further into a refused tenant's 100 ms refill (BOUNDARY_RUN_CALLS), so in every warm-up at least one
 * boundary falls off a refill, and each refused tenant's first call after it is refused on the full path
 * (tokensRetryAfterSeconds). A warm-up whose boundaries all fell on a refill (its runs were whole seconds of
 * traffic) left that call without type feedback; one in the measured phase then deoptimised decideInto, and until
 * V8 had optimised it again (seconds later on a busy machine) the calls ran in code that boxes their numbers:
 * 3-11 scavenges in one run of ten with two cores busy elsewhere.
 */
async function warmUp(names: readonly string[], hot: Hot): Promise<void> {
  for (let boundary = 0; boundary < 2; boundary++) {
    await run(names, BOUNDARY_RUN_CALLS);
    await pastNextSecond();
  }
  const deadline = performance.now() + 60_000;
  do {
    await run(names, CALLS_PER_SECOND);
    if (performance.now() > deadline) throw new Error(`V8 did not optimise the admit loop within 60 s: ${JSON.stringify(statusesOf(hot))}`);
  } while (!allOptimised(hot));
}
// Warm-up: both paths, fast and full, admitted and refused; each phase warms its own path again just before.
await warmUp(admittedNames, admittedHot);
await warmUp(refusedNames, refusedHot);
const admittedPhase = await scavengesDuring({ names: admittedNames, hot: admittedHot });
const refusedPhase = await scavengesDuring({ names: refusedNames, hot: refusedHot });
observer.disconnect();
await governor.close();
console.log(JSON.stringify({ calls: PHASE_CALLS, admittedPhase, refusedPhase }));
