// The serving process' garbage-collector tuning (src/gcTuning.ts): once applied, no scavenge hands work to V8's
// helper threads. Each side runs in a child process of its own with V8's GC trace, which prints per scavenge how
// long helpers worked on it (background.scavenge.parallel); the untuned side shows the trace can see helpers.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const MODULE = new URL('../../src/gcTuning.ts', import.meta.url).href;

/** Each scavenge's helper time, ms, in a child that allocates young garbage for a while (tuned or not first). */
function helperMsPerScavenge(tuned: boolean): number[] {
  const code = `
    const { tuneGarbageCollection } = await import(${JSON.stringify(MODULE)});
    if (${tuned}) tuneGarbageCollection();
    // Traced from here: the scavenges of loading the modules came before the tuning.
    (await import('node:v8')).setFlagsFromString('--trace-gc-nvp');
    let keep = [];
    for (let i = 0; i < 4e6; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 2e5) keep = []; }`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8', timeout: 60_000 });
  expect(child.status, child.stderr).toBe(0);
  return [...child.stdout.matchAll(/gc=s .*?background\.scavenge\.parallel=([0-9.]+)/g)].map((match) => Number(match[1]));
}

describe('tuneGarbageCollection', () => {
  it('makes every scavenge the thread\'s own: no helper works on one', () => {
    const untuned = helperMsPerScavenge(false);
    expect(untuned.length).toBeGreaterThan(5);
    expect(untuned.some((ms) => ms > 0)).toBe(true);

    const tuned = helperMsPerScavenge(true);
    expect(tuned.length).toBeGreaterThan(5);
    expect(tuned.every((ms) => ms === 0)).toBe(true);
  });
});
