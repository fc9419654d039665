// Every property-based suite runs its properties through here, so none can pass on fewer runs than it planned.
// fast-check, given a time limit, stops a property when the limit passes and reports it as passed if one run
// had succeeded (a 1,200-run property once passed after 5 runs). Here a property runs exactly its planned runs:
// each run's value is generated, the check awaited, and the run counted only once its check (and every check
// it deferred) succeeded. The count is printed as `fuzz: <completed> of <planned> runs (<name>)` and the
// property fails when fewer than planned completed, whatever stopped it: a failed check, a run that took
// longer than its bound (a hang), or the property's own time limit (so a suite always ends by itself).
//
// FUZZ_RUNS plans every property's runs (fewer on a slow machine, more for a long local hunt); without it,
// each property plans the runs its suite chose to fit CI.
import fc from 'fast-check';

export interface FuzzPlan {
  /** Printed with the count: which property this is. */
  name: string;
  /** Runs planned when FUZZ_RUNS is not set. */
  runs: number;
  /** A run's check (not counting what it deferred) that takes longer than this fails the property: a hang. */
  runTimeoutMs: number;
  /** The property stops after this long, counted and failed if short of its planned runs. */
  timeLimitMs: number;
  /**
   * Stop at the first failure without shrinking: for properties whose failing run can leave the system under
   * test unable to answer (each shrinking step would wait out its bounds again).
   */
  endOnFailure?: boolean;
  /** fast-check's seed, to replay a failure (FUZZ_SEED too). */
  seed?: number;
}

/** Checks a run may leave running (a request answered only after a timeout): awaited before the count is final. */
export type Defer = (label: string, check: Promise<unknown>) => void;

export interface FuzzOutcome {
  planned: number;
  completed: number;
  elapsedMs: number;
}

/** The planned runs: FUZZ_RUNS when set (a whole number from 1), else the suite's own. */
export function plannedRuns(suiteDefault: number): number {
  const raw = process.env.FUZZ_RUNS;
  if (raw === undefined || raw.trim() === '') return suiteDefault;
  const runs = Number(raw);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`FUZZ_RUNS must be a whole number from 1, not "${raw}"`);
  return runs;
}

/**
 * Runs `check` on exactly the planned number of generated values, prints `fuzz: <completed> of <planned> runs`,
 * and throws (failing the test) unless every planned run completed. `check` throws (or fails an expect) to fail
 * a run; what it hands to `defer` is awaited after the last run and fails its run if it rejects.
 */
export async function fuzzExactly<T>(plan: FuzzPlan, values: fc.Arbitrary<T>, check: (value: T, defer: Defer) => Promise<void>): Promise<FuzzOutcome> {
  const planned = plannedRuns(plan.runs);
  const startedAt = performance.now();
  let returned = 0;
  let failedOnce = false;
  const deferred: Array<{ label: string; check: Promise<unknown> }> = [];
  const property = fc.asyncProperty(values, async (value) => {
    // Shrinking re-runs the check after the first failure: only runs before it are counted.
    const counting = !failedOnce;
    const ownDeferred: Array<{ label: string; check: Promise<unknown> }> = [];
    try {
      await check(value, (label, pending) => {
        // A deferred check never ends the process by rejecting unobserved: it is observed at once.
        pending.catch(() => {});
        ownDeferred.push({ label, check: pending });
      });
    } catch (error) {
      failedOnce = true;
      throw error;
    }
    if (counting) {
      returned++;
      deferred.push(...ownDeferred);
    }
  });
  const seedText = process.env.FUZZ_SEED;
  const details = await fc.check(property, {
    numRuns: planned,
    timeout: plan.runTimeoutMs,
    interruptAfterTimeLimit: plan.timeLimitMs,
    markInterruptAsFailure: true,
    endOnFailure: plan.endOnFailure ?? false,
    ...(plan.seed !== undefined ? { seed: plan.seed } : seedText ? { seed: Number(seedText) } : {}),
  });
  // Deferred checks: each failure takes one run off the completed count.
  const settled = await Promise.allSettled(deferred.map((each) => each.check));
  const deferredFailures = settled.flatMap((outcome, i) => (outcome.status === 'rejected' ? [`${deferred[i]!.label}: ${String(outcome.reason instanceof Error ? outcome.reason.message : outcome.reason)}`] : []));
  const completed = returned - deferredFailures.length;
  const elapsedMs = performance.now() - startedAt;
  console.log(`fuzz: ${completed} of ${planned} runs (${plan.name}; ${(elapsedMs / 1000).toFixed(1)} s; seed ${details.seed})`);
  const reasons: string[] = [];
  if (details.failed) {
    reasons.push((await fc.asyncDefaultReportMessage(details)) ?? 'the property failed');
    const error = details.errorInstance;
    if (error !== null && error !== undefined) reasons.push(`Got: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (deferredFailures.length > 0) reasons.push(`${deferredFailures.length} deferred check(s) failed:\n${deferredFailures.slice(0, 5).join('\n')}`);
  if (completed < planned && reasons.length === 0) reasons.push(`stopped after ${completed} run(s)`);
  if (reasons.length > 0) throw new Error(`${plan.name}: ${completed} of ${planned} runs completed\n${reasons.join('\n')}`);
  return { planned, completed, elapsedMs };
}
