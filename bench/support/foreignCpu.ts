// What else used the machine while a bench ran. The load average cannot tell: a bench of several processes
// (replicas, a proxy, wrk, PostgreSQL backends) raises it by itself, and a quiet host would be called loaded.
// This meter reads every process's CPU time from /proc twice a second and splits it three ways:
//   - the bench: the process started for the bench and everything below it (servers, wrk, h2load, haproxy);
//   - the shared servers the benches talk to (PostgreSQL, Redis, NATS, Mosquitto, RabbitMQ), whoever asks them;
//   - foreign: everything else in user space (another build, a test run, an editor's type checker).
// `foreignCores` is the foreign CPU-seconds over the wall-clock seconds: a host is quiet when it is under 0.1
// (a tenth of one core). On a system without /proc the meter reports null and the load average decides alone.
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;
const POLL_MS = 500;
const SHARED_SERVERS = new Set(['postgres', 'redis-server', 'nats-server', 'mosquitto', 'beam.smp', 'epmd', 'erl_child_setup']);

interface ProcessTicks {
  ppid: number;
  comm: string;
  ticks: number;
}

function readProcesses(): Map<number, ProcessTicks> | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  const found = new Map<number, ProcessTicks>();
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const open = stat.indexOf('(');
      const close = stat.lastIndexOf(')');
      // Fields after the command: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime.
      const fields = stat.slice(close + 2).split(' ');
      found.set(pid, { ppid: Number(fields[1]), comm: stat.slice(open + 1, close), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return found;
}

export interface ForeignCpu {
  /** Foreign CPU-seconds per wall-clock second (null: /proc unreadable). */
  foreignCores: number | null;
  benchCores: number | null;
  sharedServerCores: number | null;
  /** The foreign commands that used most, CPU-seconds each. */
  foreignTop: Record<string, number>;
}

/** Starts metering; `stop()` returns the split since the start. `benchPid` is the bench's own process. */
export function meterForeignCpu(benchPid: number): { stop(): ForeignCpu } {
  const self = process.pid;
  const startedMs = performance.now();
  let last = readProcesses();
  const totals = { bench: 0, shared: 0, foreign: 0 };
  const foreignByComm = new Map<string, number>();
  const isBench = (pid: number, table: Map<number, ProcessTicks>) => {
    for (let at = pid, hops = 0; at > 1 && hops < 64; hops++) {
      if (at === benchPid || at === self) return true;
      const next = table.get(at)?.ppid;
      if (next === undefined) return false;
      at = next;
    }
    return false;
  };
  const poll = () => {
    const now = readProcesses();
    if (now === null || last === null) return;
    for (const [pid, entry] of now) {
      // Kernel threads (children of kthreadd, pid 2) are the kernel's, not another program's.
      if (pid === 2 || entry.ppid === 2) continue;
      const before = last.get(pid);
      const used = before !== undefined && before.comm === entry.comm ? entry.ticks - before.ticks : entry.ticks;
      if (used <= 0) continue;
      if (isBench(pid, now)) totals.bench += used;
      else if (SHARED_SERVERS.has(entry.comm)) totals.shared += used;
      else {
        totals.foreign += used;
        foreignByComm.set(entry.comm, (foreignByComm.get(entry.comm) ?? 0) + used);
      }
    }
    last = now;
  };
  const timer = setInterval(poll, POLL_MS);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      poll();
      const seconds = (performance.now() - startedMs) / 1000;
      if (last === null || seconds <= 0) return { foreignCores: null, benchCores: null, sharedServerCores: null, foreignTop: {} };
      const cores = (ticks: number) => Math.round((ticks / TICKS_PER_SECOND / seconds) * 100) / 100;
      const foreignTop = Object.fromEntries(
        [...foreignByComm]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 5)
          .map(([comm, ticks]) => [comm, Math.round((ticks / TICKS_PER_SECOND) * 10) / 10]),
      );
      return { foreignCores: cores(totals.foreign), benchCores: cores(totals.bench), sharedServerCores: cores(totals.shared), foreignTop };
    },
  };
}
