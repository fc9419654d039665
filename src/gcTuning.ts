// The serving process' garbage collector, tuned for the hosts the service runs on: a few cores shared with its
// database and its projection threads.
//
// V8 scavenges the young generation (every 50-150 ms at 50,000 active tenants) in parallel by default: the
// admitting thread hands parts of the work to V8's helper threads and waits for them to finish. On two busy cores a
// helper that took a part may not be on a core: in a traced run of bench/scale.ts at 50,000 a scavenge held the
// admitting thread 68 ms while its helpers had worked 0.9 ms of it, and another one held it 101 ms. Scavenged by
// the admitting thread alone, a run's scavenges took 1.7 ms at the median and 6.9 ms at the 99th percentile, and
// 3.3 s of its 175 s in all (3.6-4.9 s in parallel runs).
import { setFlagsFromString } from 'node:v8';

/** Applies the tuning to this process (every thread of it); called first thing when the service starts serving. */
export function tuneGarbageCollection(): void {
  setFlagsFromString('--no-parallel-scavenge');
}
