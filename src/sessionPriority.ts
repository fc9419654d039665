// A process' session's share of the cores on Linux. The scheduler shares the cores between sessions first
// (autogroups, sched(7)) and only then between the threads of a session by their nice values, so what orders the
// service against its projection worker processes, its PostgreSQL and anything else on the host is its session's
// nice value, /proc/self/autogroup; a thread's own nice value orders it only within its session.
//
// Two uses: a projection worker process lowers its session to the projection's threadNice (any process may); the
// service raises its own when GOVERNANCE_NICE asks (a value below 0 needs CAP_SYS_NICE, as nice(1) does). On two
// cores at 50,000 active tenants the admitting thread waited 50-115 ms for a core at times, beside PostgreSQL, the
// load and the projections (bench/scale.ts, bench/RESULTS.md 2026-12-05 17:20-19:15).
// Under systemd (a cgroup of its own, where autogroups do not apply) CPUWeight= is the same knob.
import { readFileSync, writeFileSync } from 'node:fs';

const AUTOGROUP = '/proc/self/autogroup';

/** What a change of the session's nice value came to: the value in force after it, and why not, if refused. */
export interface SessionNice {
  /** The session's nice value now; null where there are no autogroups (not Linux, or disabled). */
  nice: number | null;
  /** Why the value asked for is not in force (EPERM: a value below 0 without CAP_SYS_NICE). */
  refused?: string;
}

/** Whether `value` is a nice value: a whole number from -20 to 19. */
export function isNiceValue(value: number): boolean {
  return Number.isInteger(value) && value >= -20 && value <= 19;
}

/** The session's nice value now, or null where there are no autogroups. */
export function sessionNice(): number | null {
  if (process.platform !== 'linux') return null;
  try {
    const match = /nice (-?\d+)/.exec(readFileSync(AUTOGROUP, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

/**
 * Sets this process' session's nice value (-20..19) on Linux. The kernel refuses changes that come faster than
 * ten a second (EAGAIN): one such refusal is tried again. Never throws: a refusal leaves the value as it was and
 * says why.
 */
export async function setSessionNice(nice: number): Promise<SessionNice> {
  if (!isNiceValue(nice)) throw new RangeError(`a nice value is a whole number from -20 to 19, not ${nice}`);
  if (sessionNice() === null) return { nice: null, refused: 'this host has no autogroups (Linux only, sched_autogroup_enabled)' };
  let refused = '';
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(AUTOGROUP, String(nice));
      return { nice: sessionNice() };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      refused = code === 'EPERM' || code === 'EACCES' ? `${code}: a nice value below 0 needs CAP_SYS_NICE` : code;
      if (code !== 'EAGAIN') break;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }
  return { nice: sessionNice(), refused };
}
