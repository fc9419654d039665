// The serving process' garbage collector, tuned for the hosts the service runs on: a few cores shared with its
// database and its projection threads.
//
// V8 scavenges the young generation (every 50-150 ms at 50,000 active tenants) in parallel by default: the
// admitting thread hands parts of the work to V8's helper threads and waits for them to finish. On two busy cores a
// helper that took a part may not be on a core: in a traced run of bench/scale.ts at 50,000 a scavenge held the
// admitting thread 68 ms while its helpers had worked 0.9 ms of it, and another one held it 101 ms. Scavenged by
// the admitting thread alone, a run's scavenges took 1.7 ms at the median and 6.9 ms at the 99th percentile, and
// 3.3 s of its 175 s in all (3.6-4.9 s in parallel runs).
//
// V8 lets the old generation grow to up to four times what the last full collection kept before it collects it
// again. After a start at full traffic at 50,000 active tenants it kept 120 MB and let the heap grow to 368 MB;
// that collection, a minute and a half later, freed 280 MB, and the scavenge after it held the admitting thread
// 41 ms (5.5 ms of it the scavenge's own work; the rest, the freed pages given back): the one stall of 30 ms or
// more in each of two runs with the admitting thread under SCHED_RR. Grown by half at most, the heap stayed at
// 141-187 MB in four runs against 327-368 MB in four without, with more full collections (16-21 a run against
// 10-21) but less time in the collector (2.9-3.7 s a run against 3.4-4.8 s) (bench/RESULTS.md, 2026-12-06 05:45).
//
// V8 does the rest of a full collection on helper threads of its own, its platform's pool: Node starts four. They
// mark the heap concurrently, sweep it, and help in the collection's pause; on two cores, four of them runnable
// at once with the admitting thread leave it waiting for a core. In a traced run of bench/scale.ts at 50,000 active
// tenants on a slower host, the stalls over 50 ms that were not a pause of the machine (57 and 63 ms) came with a
// full collection, the admitting thread 8-12 ms on a core and 46-57 ms waiting for one while the four helpers ran
// and waited beside it; in the catch-up after, 163 ms (bench/RESULTS.md, 2026-12-06 17:50). The pool's size is
// fixed when the process starts, so it is a flag of the command line (SERVICE_NODE_FLAGS): the bin's first line,
// `npm start`, the Dockerfile and the projection worker processes pass it, and `serve` warns when it was started
// without it.
import { setFlagsFromString } from 'node:v8';

/** V8's helper threads in each process of the service: one, so a full collection takes at most one core beside it. */
export const V8_POOL_SIZE = 1;

/** The flags every process of the service starts with (node's command line; bin/governance.js's first line too). */
export const SERVICE_NODE_FLAGS: readonly string[] = [`--v8-pool-size=${V8_POOL_SIZE}`];

/** Node's own pool size, when no --v8-pool-size is given. */
const NODE_DEFAULT_POOL_SIZE = 4;

/**
 * The size of V8's pool this process started with: the last --v8-pool-size of its command line or of
 * NODE_OPTIONS (where node reads it too), else node's default.
 */
export function v8PoolSize(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): number {
  let size = NODE_DEFAULT_POOL_SIZE;
  const flags = [...nodeOptions.split(/\s+/).filter(Boolean), ...execArgv];
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i]!;
    const value = flag.startsWith('--v8-pool-size=') ? flag.slice('--v8-pool-size='.length) : flag === '--v8-pool-size' ? flags[i + 1] : undefined;
    if (value !== undefined && /^\d+$/.test(value)) size = Number(value);
  }
  return size;
}

/** How much the old generation may grow, in percent of what the last full collection kept, before the next. */
export const HEAP_GROWING_PERCENT = 50;

/** Applies the tuning to this process (every thread of it); called first thing when the service starts serving. */
export function tuneGarbageCollection(): void {
  setFlagsFromString('--no-parallel-scavenge');
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
