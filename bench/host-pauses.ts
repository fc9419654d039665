// The host's own pauses, so readers can tell hosts of one kind apart (as bench/start-time.ts tells their speed):
// how often the machine stops running a process that is ready to run (support/hostPauses.ts's probe) while both
// cores are kept busy, against while one is. On one host of this kind (bench/RESULTS.md, 2026-12-06) both cores
// busy brought pauses of about 100 ms, 24 in 40 s, and one core busy none: there, whatever keeps both cores
// busy at once (at 50,000 active tenants: the admitting thread, wrk, PostgreSQL and a projection's page) risks a
// stall of the whole machine twice scale.ts's 50 ms bound, whatever the program does. On another host two
// spinning processes never made the probe wake more than 10 ms late. A core taken while the other runs on (its
// steal) is counted beside the pauses: on a third host (2026-12-06, 15:50) steal came in pieces of 100 ms, one
// core at a time, with both cores busy, where the probe saw two pauses a minute.
//
//   npx tsx bench/host-pauses.ts          # 30 s each way, alternated twice (about 2 min)
//   BENCH_QUICK=1 npx tsx bench/host-pauses.ts
//
// Last line: `ours` = pauses a minute with both cores busy, `baseline` = with one core busy, each with the longest.
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { coreSteals, longestPauseMs, machinePauses, probeHostPauses, stolenMs } from './support/hostPauses.ts';

const QUICK = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const SECONDS = QUICK ? 5 : 30;
const ROUNDS = 2;
const CORES = availableParallelism();

/** Keeps `count` cores busy with processes that spin until killed, or for SECONDS and 5 more if this one dies. */
function spin(count: number): ChildProcess[] {
  const code = `const end = Date.now() + ${(SECONDS + 5) * 1000}; while (Date.now() < end) {}`;
  return Array.from({ length: count }, () => spawn(process.execPath, ['-e', code], { stdio: 'ignore' }));
}

interface Measured {
  busyCores: number;
  seconds: number;
  pauses: number;
  longestMs: number;
  /** A core taken while the other ran on (its steal, 30 ms or more at once), and all steal, ms. */
  coreSteals: number;
  coreStealLongestMs: number;
  stolenMs: number;
}

async function measure(busyCores: number): Promise<Measured> {
  const probe = probeHostPauses();
  const spinners = spin(busyCores);
  const from = Date.now();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  const to = Date.now();
  for (const spinner of spinners) spinner.kill('SIGKILL');
  const probed = probe.stop(from, to);
  const pauses = machinePauses(probed);
  const steals = coreSteals(probed);
  return { busyCores, seconds: (to - from) / 1000, pauses: pauses.length, longestMs: longestPauseMs(pauses), coreSteals: steals.length, coreStealLongestMs: longestPauseMs(steals), stolenMs: stolenMs(probed) };
}

const runs: Measured[] = [];
for (let round = 0; round < ROUNDS; round++) {
  // Alternated: one core busy, then all of them.
  for (const busy of [1, CORES]) {
    const measured = await measure(busy);
    console.log(JSON.stringify({ round, ...measured }));
    runs.push(measured);
    // A breath between settings, so one's spinners are gone before the next's probe starts.
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
const perMinute = (busy: number) => {
  const of = runs.filter((run) => run.busyCores === busy);
  const seconds = of.reduce((sum, run) => sum + run.seconds, 0);
  const aMinute = (count: number) => Math.round((count / seconds) * 600) / 10;
  return {
    perMinute: aMinute(of.reduce((sum, run) => sum + run.pauses, 0)),
    longestMs: Math.max(...of.map((run) => run.longestMs)),
    coreStealsPerMinute: aMinute(of.reduce((sum, run) => sum + run.coreSteals, 0)),
    coreStealLongestMs: Math.max(...of.map((run) => run.coreStealLongestMs)),
    stolenMsPerMinute: Math.round(of.reduce((sum, run) => sum + run.stolenMs, 0) / (seconds / 60)),
  };
};
const all = perMinute(CORES);
const one = perMinute(1);
console.log(
  JSON.stringify({
    bench: 'host-pauses',
    ours: all.perMinute,
    baseline: one.perMinute,
    ratio: one.perMinute > 0 ? Math.round((all.perMinute / one.perMinute) * 100) / 100 : null,
    unit: `pauses of the whole machine a minute (a probe ready to run, neither on a core nor waiting for one, for 30 ms or more), with all ${CORES} cores kept busy; ${SECONDS} s each way, ${ROUNDS} rounds alternated`,
    baselineIs: 'the same probe with one core kept busy',
    generator: 'spinning node processes (one a busy core), unpinned, beside the probe',
    longestMsAllBusy: all.longestMs,
    longestMsOneBusy: one.longestMs,
    // One core taken while the other ran on (30 ms or more of its steal at once), which the probe cannot see.
    coreStealsPerMinuteAllBusy: all.coreStealsPerMinute,
    coreStealsPerMinuteOneBusy: one.coreStealsPerMinute,
    coreStealLongestMsAllBusy: all.coreStealLongestMs,
    coreStealLongestMsOneBusy: one.coreStealLongestMs,
    stolenMsPerMinuteAllBusy: all.stolenMsPerMinute,
    stolenMsPerMinuteOneBusy: one.stolenMsPerMinute,
    cores: CORES,
    quick: QUICK,
  }),
);
