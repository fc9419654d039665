// The serving process' garbage-collector tuning (src/gcTuning.ts), each side in a child process of its own with
// V8's GC trace: once applied, no scavenge hands work to V8's helper threads (the trace prints per scavenge how long
// helpers worked on it, background.scavenge.parallel; the untuned side shows the trace can see helpers), and the
// old generation grows by at most HEAP_GROWING_PERCENT of what a full collection kept before the next one (the
// untuned side shows V8 lets it grow further on the same work).
// And the service's node flags: one V8 helper thread (SERVICE_NODE_FLAGS), on every launcher the project ships.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, SERVICE_NODE_FLAGS, V8_POOL_SIZE, v8PoolSize } from '../../src/gcTuning.ts';

const MODULE = new URL('../../src/gcTuning.ts', import.meta.url).href;

/** V8's GC trace of a child that runs `work` (tuned or not first). */
function gcTrace(tuned: boolean, work: string): string {
  const code = `
    const { tuneGarbageCollection } = await import(${JSON.stringify(MODULE)});
    if (${tuned}) tuneGarbageCollection();
    // Traced from here: the collections of loading the modules came before the tuning.
    (await import('node:v8')).setFlagsFromString('--trace-gc-nvp');
    ${work}`;
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8', timeout: 120_000, maxBuffer: 256 * 1024 * 1024 });
  expect(child.status, child.stderr).toBe(0);
  return child.stdout;
}

/** Each scavenge's helper time, ms, in a child that allocates young garbage for a while. */
function helperMsPerScavenge(tuned: boolean): number[] {
  const trace = gcTrace(tuned, `let keep = []; for (let i = 0; i < 4e6; i++) { keep.push({ i, s: 'x' + i }); if (keep.length > 2e5) keep = []; }`);
  return [...trace.matchAll(/gc=s .*?background\.scavenge\.parallel=([0-9.]+)/g)].map((match) => Number(match[1]));
}

/**
 * Each full collection's heap before it and after it (bytes), in a child that keeps about 100 MB and promotes
 * garbage into the old generation (objects that outlive two scavenges, then die), as the service's summaries do.
 * Only the collections once the 100 MB are built: before, each one keeps more than the last.
 */
function fullCollections(tuned: boolean): { before: number; after: number }[] {
  const trace = gcTrace(
    tuned,
    `const live = []; for (let i = 0; i < 1_000_000; i++) live.push({ i, s: 'live' + i, a: [i, i + 1] });
     console.log('BUILT');
     const ring = new Array(300_000); for (let i = 0; i < 12e6; i++) ring[i % ring.length] = { i, s: 'x' + i, a: [i] };
     if (live.length !== 1_000_000) throw new Error('lost');`,
  );
  return [...(trace.split('BUILT')[1] ?? '').matchAll(/gc=mc .*?total_size_before=(\d+) total_size_after=(\d+)/g)]
    .map((match) => ({ before: Number(match[1]), after: Number(match[2]) }))
    .filter((each) => each.after > 50 * 1024 * 1024);
}

/**
 * Each full collection's heap before it against what the one before kept. The next collection's marking starts
 * once the old generation has grown by HEAP_GROWING_PERCENT; the heap before it also holds the young generation
 * (up to 48 MB) and what was allocated while the marking ran (measured here: 1.6x with the tuning, 4.1x without).
 */
function growths(collections: { before: number; after: number }[]): number[] {
  return collections.slice(1).map((each, index) => each.before / collections[index]!.after);
}

describe('tuneGarbageCollection', () => {
  it("makes every scavenge the thread's own: no helper works on one", () => {
    const untuned = helperMsPerScavenge(false);
    expect(untuned.length).toBeGreaterThan(5);
    expect(untuned.some((ms) => ms > 0)).toBe(true);

    const tuned = helperMsPerScavenge(true);
    expect(tuned.length).toBeGreaterThan(5);
    expect(tuned.every((ms) => ms === 0)).toBe(true);
  });

  it(`lets the old generation grow by ${HEAP_GROWING_PERCENT} % of what a full collection kept, not four times it, before the next`, () => {
    const untuned = growths(fullCollections(false));
    expect(untuned.length).toBeGreaterThan(0);
    expect(Math.max(...untuned)).toBeGreaterThan(2.5);

    const tuned = growths(fullCollections(true));
    expect(tuned.length).toBeGreaterThan(3);
    // 1 + 50 % of the old generation, with the young generation and the marking's own allocation beside it.
    expect(Math.max(...tuned)).toBeLessThan(2);
  }, 240_000);
});

/** The threads of a node process started with `flags` (Linux: /proc/self/task). */
function threadsWith(flags: readonly string[], env: Record<string, string> = {}): number {
  const child = spawnSync(process.execPath, [...flags, '-e', "console.log(require('node:fs').readdirSync('/proc/self/task').length)"], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '', ...env } });
  expect(child.status, child.stderr).toBe(0);
  return Number(child.stdout.trim());
}

describe('the service\'s node flags (V8\'s pool of helper threads)', () => {
  it(`is ${V8_POOL_SIZE} helper thread where node starts 4, on every launcher the project ships`, () => {
    expect(SERVICE_NODE_FLAGS).toEqual([`--v8-pool-size=${V8_POOL_SIZE}`]);
    const flags = SERVICE_NODE_FLAGS.join(' ');
    const root = new URL('../../', import.meta.url);
    const firstLine = readFileSync(new URL('bin/governance.js', root), 'utf8').split('\n')[0];
    expect(firstLine).toBe(`#!/usr/bin/env -S node ${flags}`);
    const start = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: Record<string, string> }).scripts.start;
    expect(start).toBe(`exec node ${flags} bin/governance.js serve`);
    const entrypoint = readFileSync(new URL('Dockerfile', root), 'utf8').match(/^ENTRYPOINT (.*)$/m)?.[1];
    expect(JSON.parse(entrypoint!)).toEqual(['node', ...SERVICE_NODE_FLAGS, 'bin/governance.js']);
  });

  it.skipIf(process.platform !== 'linux')('takes effect: a process started with them has 3 threads fewer than one without', () => {
    expect(threadsWith([]) - threadsWith(SERVICE_NODE_FLAGS)).toBe(4 - V8_POOL_SIZE);
    expect(threadsWith([], { NODE_OPTIONS: SERVICE_NODE_FLAGS.join(' ') })).toBe(threadsWith(SERVICE_NODE_FLAGS));
  });

  it('reads the pool size a process started with from its command line and NODE_OPTIONS, the last one given', () => {
    expect(v8PoolSize([], '')).toBe(4);
    expect(v8PoolSize(['--v8-pool-size=1'], '')).toBe(1);
    expect(v8PoolSize(['--v8-pool-size', '2'], '')).toBe(2);
    expect(v8PoolSize([], '--max-old-space-size=100 --v8-pool-size=3')).toBe(3);
    expect(v8PoolSize(['--v8-pool-size=1'], '--v8-pool-size=3')).toBe(1);
    expect(v8PoolSize(['--v8-pool-size=x'], '')).toBe(4);
  });
});
