// A timing test's own clock on a shared machine: the CPU time the measured work used, in this process and in
// the local server processes that served it. Wall time on a machine whose cores other suites keep busy counts
// their turns too, so a bound checked on it fails by chance; CPU time counts only the work's own, which is
// about what the same work takes on an idle machine (a little more: GC threads), so the bound is not loosened.
// Server processes are read from /proc (processCpuMicros), and must be on this machine.
import { processCpuMicros } from './replicas.ts';

/** CPU µs a server process has used; null where /proc does not show it (not on this machine). */
function serverCpuMicros(pid: number): number | null {
  try {
    return processCpuMicros(pid);
  } catch {
    return null;
  }
}

function ownCpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

/**
 * Starts counting the CPU time of this process and of `serverPids`. `stop()` gives the ms used since, or null
 * when a server process could not be read: the caller then has only the wall clock.
 */
export function startCpuClock(serverPids: readonly number[] = []): { stop(): number | null } {
  const ownBefore = ownCpuMicros();
  const serversBefore = serverPids.map(serverCpuMicros);
  return {
    stop() {
      let micros = ownCpuMicros() - ownBefore;
      for (const [i, pid] of serverPids.entries()) {
        const before = serversBefore[i];
        const after = serverCpuMicros(pid);
        if (before === null || before === undefined || after === null) return null;
        micros += after - before;
      }
      return micros / 1000;
    },
  };
}
