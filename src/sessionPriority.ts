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
//
// A share is still a share: the busiest thread of the host, the admitting one, is the one a fair scheduler makes
// wait when every core is taken. GOVERNANCE_REALTIME_PRIORITY runs that one thread (the event loop every door
// answers on) under SCHED_RR instead, so it takes a core the moment it has work instead of waiting its turn (in one
// run of six at 50,000 active tenants it still waited 44-51 ms three times with the host nearly idle, as the
// kernel's share kept for normal threads would make it: bench/RESULTS.md, 2026-12-06 05:45). V8's and libuv's
// threads and the projection worker processes stay at their normal priority (the policy is set with
// reset-on-fork, so nothing it starts inherits it), and Linux keeps 5 % of every second for the rest
// (sched_rt_runtime_us). Set with chrt(1) from util-linux: Node has no binding for sched_setscheduler(2).
import { execFile } from 'node:child_process';
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

/** What running the admitting thread under SCHED_RR came to: its real-time priority now, and why not, if refused. */
export interface RealtimePriority {
  /** The thread's SCHED_RR priority now; null when it runs under the normal policy (or this is not Linux). */
  priority: number | null;
  /** Why the priority asked for is not in force. */
  refused?: string;
}

/** Whether `value` is a SCHED_RR priority: a whole number from 1 to 99. */
export function isRealtimePriority(value: number): boolean {
  return Number.isInteger(value) && value >= 1 && value <= 99;
}

const SCHED_RR = 2;

/** The SCHED_RR priority of this process' thread `tid` (default: the main thread), or null under another policy. */
export function realtimePriority(tid: number = process.pid): number | null {
  if (process.platform !== 'linux') return null;
  try {
    // proc(5), /proc/[pid]/task/[tid]/stat: field 40 rt_priority, 41 policy (counted from 1, the name in parentheses is 2).
    const fields = readFileSync(`/proc/${process.pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[38]) === SCHED_RR ? Number(fields[37]) : null;
  } catch {
    return null;
  }
}

/**
 * Runs this process' main thread (the admitting thread) under SCHED_RR at `priority` (1..99) with reset-on-fork,
 * on Linux. Needs CAP_SYS_NICE (and, in a cgroup with real-time group scheduling, real-time time of its own).
 * Never throws for a refusal: the thread then runs as it was, and the answer says why.
 */
export async function setRealtimePriority(priority: number): Promise<RealtimePriority> {
  if (!isRealtimePriority(priority)) throw new RangeError(`a real-time priority is a whole number from 1 to 99, not ${priority}`);
  if (process.platform !== 'linux') return { priority: null, refused: 'SCHED_RR is set on Linux only' };
  return new Promise((resolve) => {
    execFile('chrt', ['--rr', '--reset-on-fork', '--pid', String(priority), String(process.pid)], { timeout: 10_000 }, (error, _stdout, stderr) => {
      const now = realtimePriority();
      if (!error && now === priority) return resolve({ priority: now });
      const code = (error as NodeJS.ErrnoException | null)?.code;
      const said = stderr.trim().split('\n').pop() ?? '';
      const refused =
        code === 'ENOENT'
          ? 'chrt (util-linux) is not installed'
          : /not permitted/i.test(said)
            ? 'EPERM: SCHED_RR needs CAP_SYS_NICE (and real-time time for its cgroup)'
            : said || String(error ?? `the thread runs at ${now ?? 'the normal policy'}`);
      resolve({ priority: now, refused });
    });
  });
}
