// The servers a benchmark measures run in a child process of their own, so the load generator's CPU is not
// counted as theirs. The child answers a 'cpu' message with its CPU time; the parent reads it before and after
// each round to report the server's CPU per request.
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { cpus } from 'node:os';
import { Governor } from '../../src/governance/index.ts';
import type { LimitSource, Recorder, TenantGovernanceRecord } from '../../src/governance/index.ts';

export interface BenchServer<Ports> {
  child: ChildProcess;
  /** What the child sent once its servers listened. */
  ports: Ports;
  /** The child's CPU time so far, in microseconds. */
  serverCpuMicros(): Promise<number>;
}

/** Parent side: runs `file serve ...args` and waits for the ports it announces. */
export async function startBenchServer<Ports>(file: string, args: readonly string[] = []): Promise<BenchServer<Ports>> {
  const child = fork(file, ['serve', ...args], { execArgv: process.execArgv, stdio: 'inherit' });
  const ports = await new Promise<Ports>((resolve, reject) => {
    child.once('message', (message) => resolve(message as Ports));
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  const serverCpuMicros = () =>
    new Promise<number>((resolve) => {
      child.once('message', (message) => resolve((message as { cpuMicros: number }).cpuMicros));
      child.send('cpu');
    });
  return { child, ports, serverCpuMicros };
}

/**
 * Pins a process, every thread of it, to one core with taskset (util-linux), when the machine has two cores or
 * more, taskset is installed and BENCH_PIN is not 0. Returns whether it did. On a 2-core machine the scheduler
 * otherwise moves a server and its load generator between the cores as it likes: the same server measured
 * 11,000 to 23,000 requests/s from one second to the next, as the two happened to share a core or not; pinned,
 * its rounds agreed within 10%.
 */
export function pinToCore(pid: number, core: number): boolean {
  // The machine's cores, not availableParallelism(): that counts the cores this process is pinned to.
  if (process.env.BENCH_PIN === '0' || cpus().length < 2) return false;
  const pinned = spawnSync('taskset', ['--all-tasks', '--pid', '--cpu-list', String(core), String(pid)], { stdio: 'ignore' });
  return pinned.error === undefined && pinned.status === 0;
}

/** Child side: answers each 'cpu' message from the parent with this process's CPU time. */
export function answerCpuQueries(): void {
  process.on('message', (message) => {
    if (message !== 'cpu') return;
    const used = process.cpuUsage();
    process.send!({ cpuMicros: used.user + used.system });
  });
}

/**
 * A Governor over fixed tenant records (no database) whose Recorder discards what it is given: the benchmarks
 * measure a door, not the ledger.
 */
export function governorOver(records: ReadonlyMap<string, TenantGovernanceRecord>): Governor {
  const limitSource: LimitSource = {
    loadTenants: async (ids) => new Map(ids.flatMap((id) => (records.has(id) ? [[id, records.get(id)!] as const] : []))),
    loadPlatformDefaults: async () => ({}),
  };
  const recorder: Recorder = { record: async () => {} };
  return new Governor({ limitSource, recorder });
}
