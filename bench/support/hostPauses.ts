// A probe of the machine itself: a small process of its own that wakes every millisecond and reports each wake-up
// more than PAUSE_MS late during which it was neither on a core nor waiting for one (Linux schedstat): nothing on
// the machine ran it, though it was runnable. Such a gap is the machine's, not a program's: in a traced run at
// 50,000 tenants (bench/RESULTS.md) the server's longest stall, 107-109 ms, fell on a 98.6 ms gap of this probe
// (1.2 ms on a core, 0.8 ms waiting for one) while the host's CPU counters read the cores mostly idle. On that
// host, with both cores kept busy by two spinning processes, the probe never woke more than 10 ms late; on
// another (2026-12-06) the same made 24 pauses of about 100 ms in 40 s, and one spinning process none: how a
// host pauses is measured by bench/host-pauses.ts. A late wake-up it spent waiting for a core is contention, and
// not counted. Linux only; elsewhere it reports nothing.
//
// A machine can also take one core away while the other runs on: the hypervisor runs something else on that
// virtual CPU, and Linux counts the time as the core's steal (/proc/stat, per CPU). The probe, on the other core,
// then wakes on time and sees nothing, while a thread on the taken core stops as in a pause. So the probe also
// reads each core's steal every 10 ms and reports every increase as a steal of that core (`cpu`): on one slower
// host (2026-12-06, 15:50) steal came in pieces of 10 ms and of 100 ms, one core at a time, with the cores busy,
// and a stall of 100.9 ms at 50,000 tenants that the probe had not seen fell on one of them.
import { spawn } from 'node:child_process';

/** A wake-up at least this late is looked at. */
const PAUSE_MS = 30;

export interface HostPause {
  /** Wall-clock ms (Date.now()) the probe woke up at, and how late; for a steal, when it was read and how long it was. */
  atMs: number;
  lateMs: number;
  /** Set for a steal of one core (the CPU's name in /proc/stat, `cpu1`); absent for a pause the probe itself saw. */
  cpu?: string;
  /** The probe's time on a core and waiting for one within the gap (ms, from counters read at most 10 ms before it); not for a steal. */
  onCpuMs?: number;
  waitingMs?: number;
}

const PROBE = `
const { readFileSync } = require('node:fs');
const file = '/proc/self/task/' + process.pid + '/schedstat';
const read = () => { try { const [on, waiting] = readFileSync(file, 'utf8').split(' '); return [Number(on), Number(waiting)]; } catch { return [NaN, NaN]; } };
// Each core's steal so far (/proc/stat, in USER_HZ ticks: 100 a second on Linux), read with the counters.
const steals = () => { const found = {}; try { for (const line of readFileSync('/proc/stat', 'utf8').split('\\n')) { if (!/^cpu\\d/.test(line)) continue; const fields = line.split(' '); found[fields[0]] = Number(fields[8]); } } catch {} return found; };
let stolen = steals();
const readSteals = () => {
  const now = steals();
  for (const cpu in now) if (stolen[cpu] !== undefined && now[cpu] > stolen[cpu]) process.stdout.write(JSON.stringify({ atMs: Date.now(), lateMs: (now[cpu] - stolen[cpu]) * 10, cpu }) + '\\n');
  stolen = now;
};
let last = performance.now(), counted = read(), countedAt = last;
setInterval(() => {
  const now = performance.now();
  if (now - last > ${PAUSE_MS} + 1) {
    const [on, waiting] = read();
    const onCpuMs = (on - counted[0]) / 1e6, waitingMs = (waiting - counted[1]) / 1e6;
    // Nothing ran it: within the gap (and the at most 10 ms before it) it was on a core or waiting for one less than half the time.
    if (onCpuMs + waitingMs < (now - countedAt) / 2) process.stdout.write(JSON.stringify({ atMs: Date.now(), lateMs: Math.round(now - last - 1), onCpuMs: Math.round(onCpuMs * 10) / 10, waitingMs: Math.round(waitingMs * 10) / 10 }) + '\\n');
    counted = [on, waiting]; countedAt = now; readSteals();
  } else if (now - countedAt >= 10) { counted = read(); countedAt = now; readSteals(); }
  last = now;
}, 1);
process.on('disconnect', () => process.exit(0));
`;

/** A core's steal at least this long is reported as a pause of that core (shorter ones count in stolenMs only). */
export const CORE_STEAL_MS = 30;

/** The pauses the probe itself saw (of the whole machine). */
export function machinePauses(pauses: readonly HostPause[]): HostPause[] {
  return pauses.filter((pause) => pause.cpu === undefined);
}

/** The steals of one core of CORE_STEAL_MS or more. */
export function coreSteals(pauses: readonly HostPause[]): HostPause[] {
  return pauses.filter((pause) => pause.cpu !== undefined && pause.lateMs >= CORE_STEAL_MS);
}

/** Every core's steal in `pauses`, ms. */
export function stolenMs(pauses: readonly HostPause[]): number {
  return pauses.reduce((sum, pause) => sum + (pause.cpu === undefined ? 0 : pause.lateMs), 0);
}

/** The longest of `pauses` (how late its wake-up was), ms; 0 for none. */
export function longestPauseMs(pauses: readonly HostPause[]): number {
  return pauses.reduce((longest, pause) => Math.max(longest, pause.lateMs), 0);
}

/** Starts the probe; `stop` ends it and answers the pauses it saw between `fromMs` and `toMs` (wall clock). */
export function probeHostPauses(): { stop: (fromMs: number, toMs: number) => HostPause[] } {
  if (process.platform !== 'linux') return { stop: () => [] };
  const probe = spawn(process.execPath, ['-e', PROBE], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const pauses: HostPause[] = [];
  let pending = '';
  probe.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) if (line.trim() !== '') pauses.push(JSON.parse(line) as HostPause);
  });
  return {
    stop(fromMs, toMs) {
      if (probe.connected) probe.disconnect();
      probe.kill();
      return pauses.filter((pause) => pause.atMs - pause.lateMs >= fromMs && pause.atMs <= toMs);
    },
  };
}
