// A session's nice value on Linux (src/sessionPriority.ts): set in a child process in a session of its own (so
// the test runner's session is never changed), read back from /proc, and a value out of range refused.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { setSessionNice } from '../../src/sessionPriority.ts';

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
