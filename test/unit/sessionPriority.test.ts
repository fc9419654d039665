// A session's nice value on Linux (src/sessionPriority.ts): set in a child process in a session of its own (so
// the test runner's session is never changed), read back from /proc, and a value out of range refused. The
// admitting thread's SCHED_RR priority: set in a child, read back from /proc, not inherited by what the child
// starts, refused with its reason without CAP_SYS_NICE (setpriv drops it).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { realtimePriority, setRealtimePriority, setSessionNice } from '../../src/sessionPriority.ts';

const hasAutogroups = process.platform === 'linux' && (() => {
  try {
    return readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1';
  } catch {
    return false;
  }
})();

/** Runs setSessionNice(nice) in a new session (setsid) and answers what it came to, and the runner's session after. */
function inOwnSession(nice: number): { set: { nice: number | null; refused?: string }; ownBefore: string; ownAfter: string } {
  const ownBefore = readFileSync('/proc/self/autogroup', 'utf8');
  const script = `import('${new URL('../../src/sessionPriority.ts', import.meta.url).href}').then(async (m) => process.stdout.write(JSON.stringify(await m.setSessionNice(${nice}))))`;
  const child = spawnSync('setsid', [process.execPath, '--import', 'tsx', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  if (child.status !== 0) throw new Error(`the child failed: ${child.stderr}`);
  return { set: JSON.parse(child.stdout) as { nice: number | null; refused?: string }, ownBefore, ownAfter: readFileSync('/proc/self/autogroup', 'utf8') };
}

describe('a session nice value (GOVERNANCE_NICE, a projection worker process)', () => {
  it.skipIf(!hasAutogroups)("sets the calling process' session's nice value, and no other session's (Linux, autogroups)", () => {
    const { set, ownBefore, ownAfter } = inOwnSession(7);
    expect(set).toEqual({ nice: 7 });
    expect(ownAfter).toBe(ownBefore);
  });

  it('refuses a value outside -20..19 before it touches anything', async () => {
    for (const bad of [-21, 20, 1.5]) await expect(setSessionNice(bad)).rejects.toThrow(/a nice value is a whole number from -20 to 19/);
  });
});

/** Whether this runner may run a thread under SCHED_RR (CAP_SYS_NICE and real-time time), probed with chrt(1). */
const mayRunRealtime = process.platform === 'linux' && spawnSync('chrt', ['--rr', '1', 'true']).status === 0;
const hasSetpriv = process.platform === 'linux' && spawnSync('setpriv', ['--version']).status === 0;

/**
 * Runs setRealtimePriority(priority) in a child (through `wrap`, e.g. setpriv) and answers what it came to, the
 * policy of a process the child starts afterwards (reset-on-fork), and the runner's main thread's after.
 */
function inChild(priority: number, wrap: string[] = []): { set: { priority: number | null; refused?: string }; forkedPolicy: number; runnerAfter: number | null } {
  const module = new URL('../../src/sessionPriority.ts', import.meta.url).href;
  const script = `import('${module}').then(async (m) => {
    const set = await m.setRealtimePriority(${priority});
    const forked = require('node:child_process').execFileSync(process.execPath, ['-e', "process.stdout.write(require('node:fs').readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[38])"], { encoding: 'utf8' });
    process.stdout.write(JSON.stringify({ set, forkedPolicy: Number(forked) }));
  })`;
  const [command, ...args] = [...wrap, process.execPath, '--import', 'tsx', '-e', script];
  const child = spawnSync(command!, args, { encoding: 'utf8', timeout: 30_000 });
  if (child.status !== 0) throw new Error(`the child failed: ${child.stderr}`);
  return { ...(JSON.parse(child.stdout) as { set: { priority: number | null; refused?: string }; forkedPolicy: number }), runnerAfter: realtimePriority() };
}

describe('the admitting thread under SCHED_RR (GOVERNANCE_REALTIME_PRIORITY)', () => {
  it.skipIf(!mayRunRealtime)('runs the main thread at the priority asked for, and nothing it starts afterwards inherits it (Linux, CAP_SYS_NICE)', () => {
    const { set, forkedPolicy, runnerAfter } = inChild(3);
    expect(set).toEqual({ priority: 3 });
    expect(forkedPolicy).toBe(0);
    expect(runnerAfter).toBeNull();
  });

  it.skipIf(!mayRunRealtime || !hasSetpriv)('without CAP_SYS_NICE says why and leaves the thread as it was', () => {
    const { set } = inChild(3, ['setpriv', '--inh-caps=-sys_nice', '--bounding-set=-sys_nice']);
    expect(set.priority).toBeNull();
    expect(set.refused).toMatch(/EPERM: SCHED_RR needs CAP_SYS_NICE/);
  });

  it('refuses a priority outside 1..99 before it touches anything', async () => {
    for (const bad of [0, 100, 1.5]) await expect(setRealtimePriority(bad)).rejects.toThrow(/a real-time priority is a whole number from 1 to 99/);
  });
});
