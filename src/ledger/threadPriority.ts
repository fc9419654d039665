// The projection worker thread runs at a lower CPU priority than the thread that admits. On a host with few
// cores and PostgreSQL beside the service (2 cores at 50,000 active tenants, bench/scale.ts), the admitting
// thread was taken off its core for 10-50 ms at a time while the worker, PostgreSQL and the load competed for
// the cores, and every request and timer of the service waited meanwhile. A projection catching up is
// background work: it goes on at full speed while a core is free, and yields it to admission when one is not.
// Lowering one's own priority needs no privilege; on a platform without per-thread priorities (a thread id
// under /proc/thread-self: Linux), nothing changes.
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** The nice value the projection worker thread takes (0 is the process' own; 19 the lowest priority). */
export const PROJECTION_THREAD_NICE = 10;

/** This thread's id as the kernel knows it, or null where it cannot be read. */
export function currentThreadId(): number | null {
  try {
    // "<pid>/task/<tid>"
    const tid = Number(readlinkSync('/proc/thread-self').split('/').at(-1));
    return Number.isInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/**
 * Lowers the calling thread's CPU priority to `nice` (never raises it); answers the nice value it runs at, or
 * null where a thread's priority cannot be set on its own.
 */
export function lowerThisThreadsPriority(nice = PROJECTION_THREAD_NICE): number | null {
  const tid = currentThreadId();
  if (tid === null) return null;
  try {
    if (getPriority(tid) < nice) setPriority(tid, nice);
    return getPriority(tid);
  } catch {
    return null;
  }
}
