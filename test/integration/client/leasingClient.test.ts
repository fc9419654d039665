// The leasing client (packages/client) in three caller processes against a service process: together they
// stay within [0.95, 1.10] x the limit over 10 windows, every admission and refusal reaches the service's
// Recorder as summaries, and killing the service mid-run gives the callers no exception (they fall back to
// half the limit, counted). The callers run the client's production settings (a 2 s exchange timeout). A
// service whose replies arrive late (a delaying proxy in front of it) must not make the callers over-admit:
// measured per window and bounded by the same 1.10 (documented in packages/client/README.md, docs/scaling.md).
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startDelayingProxy, type DelayingProxy } from '../../support/delayingProxy.ts';

const LIMIT = 300;
/**
 * A window in which a caller went this long without a turn (the machine ran something else) did not offer the
 * limit throughout: its admissions say nothing about what late answers cost, and the lower bound skips it.
 */
const STARVED_GAP_MS = 50;
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

interface WorkerResult {
  perSecond: Record<string, number>;
  /** Per second, the longest time between two of the caller's turns (ms). */
  longestGapMs: Record<string, number>;
  exceptions: number;
  stats: { fallbackActive: boolean; fallbackAdmittedUnits: number; failedExchanges: number };
  startedAtMs: number;
  endedAtMs: number;
}

const children: ChildProcess[] = [];
const proxies: DelayingProxy[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const proxy of proxies.splice(0)) await proxy.close();
});

/**
 * The callers' admissions per wall-clock second, summed, over the whole seconds in which all three callers
 * were running (from the first whole second after the last one started to the last whole second before the
 * first one stopped). A second in which one caller's lease took the whole limit counts like any other.
 */
function windowsOfAll(results: WorkerResult[]): { windows: number[]; total: Record<number, number> } {
  const total: Record<number, number> = {};
  for (const result of results) for (const [second, count] of Object.entries(result.perSecond)) total[Number(second)] = (total[Number(second)] ?? 0) + count;
  const first = Math.ceil(Math.max(...results.map((result) => result.startedAtMs)) / 1000);
  const last = Math.floor(Math.min(...results.map((result) => result.endedAtMs)) / 1000) - 1;
  const windows: number[] = [];
  for (let second = first; second <= last; second++) {
    total[second] ??= 0;
    windows.push(second);
  }
  return { windows, total };
}

async function startServer(): Promise<{ child: ChildProcess; url: string; totals(): Promise<{ admitted: number; refused: number }> }> {
  const child = fork(here('leaseServer.child.ts'), [], { execArgv: ['--import', 'tsx'], env: { ...process.env, LEASE_TEST_LIMIT: String(LIMIT) } });
  children.push(child);
  const { port } = await new Promise<{ port: number }>((resolve, reject) => {
    child.once('message', (message) => resolve(message as { port: number }));
    child.once('exit', (code) => reject(new Error(`lease server exited with ${code}`)));
  });
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    totals: () =>
      new Promise((resolve) => {
        child.once('message', (message) => resolve((message as { totals: { admitted: number; refused: number } }).totals));
        child.send('totals');
      }),
  };
}

function runWorker(url: string, seconds: number): { child: ChildProcess; result: Promise<WorkerResult> } {
  const child = fork(here('clientWorker.child.ts'), [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, LEASE_TEST_URL: url, LEASE_TEST_SECONDS: String(seconds) },
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const result = new Promise<WorkerResult>((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(output.trim().split('\n').at(-1)!) as WorkerResult) : reject(new Error(`worker exited ${code}`)))),
  );
  return { child, result };
}

describe('leasing client across processes', () => {
  it('three callers stay within [0.95, 1.10] x the limit over 10 windows, and the Recorder gets every admission', async () => {
    const server = await startServer();
    const results = await Promise.all([0, 1, 2].map(() => runWorker(server.url, 13).result));
    expect(results.map((each) => each.exceptions)).toEqual([0, 0, 0]);
    expect(results.map((each) => each.stats.failedExchanges)).toEqual([0, 0, 0]);
    const { windows: all, total } = windowsOfAll(results);
    const windows = all.slice(0, 10);
    expect(windows, `windows in which all three ran: ${all.length}`).toHaveLength(10);
    const admitted = windows.reduce((sum, second) => sum + total[second]!, 0);
    expect(admitted, `per window: ${windows.map((second) => total[second]).join(', ')}`).toBeGreaterThanOrEqual(0.95 * LIMIT * 10);
    expect(admitted).toBeLessThanOrEqual(1.1 * LIMIT * 10);
    for (const second of windows) expect(total[second]!).toBeLessThanOrEqual(1.1 * LIMIT);
    // Every admission the callers counted came back as a summary (close() sends the last second).
    const everything = Object.values(total).reduce((sum, count) => sum + count, 0);
    const recorded = await server.totals();
    expect(recorded.admitted).toBe(everything);
    expect(recorded.refused).toBeGreaterThan(0);
  }, 60_000);

  it('killing the service mid-run throws nothing at the callers; they meter locally at half the limit, counted', async () => {
    const server = await startServer();
    const worker = runWorker(server.url, 5);
    // Let the client learn the limit, then kill the service without warning.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    server.child.kill('SIGKILL');
    const result = await worker.result;
    expect(result.exceptions).toBe(0);
    expect(result.stats.fallbackActive).toBe(true);
    expect(result.stats.failedExchanges).toBeGreaterThan(0);
    expect(result.stats.fallbackAdmittedUnits).toBeGreaterThan(0);
    const lastSeconds = Object.entries(result.perSecond).sort(([a], [b]) => Number(a) - Number(b)).slice(-2, -1);
    for (const [, count] of lastSeconds) expect(count).toBeLessThanOrEqual(LIMIT / 2);
  }, 30_000);

  it.each([100, 300])(
    'a service whose replies come %i ms late each way: no window passes 1.10 x the limit (grants never outlive their window)',
    async (delayMs) => {
      const server = await startServer();
      const proxy = await startDelayingProxy({ host: '127.0.0.1', port: Number(new URL(server.url).port) }, delayMs);
      proxies.push(proxy);
      const results = await Promise.all([0, 1, 2].map(() => runWorker(`http://127.0.0.1:${proxy.port}`, 13).result));
      expect(results.map((each) => each.exceptions)).toEqual([0, 0, 0]);
      // 2 x the delay is well within the 2 s exchange timeout: no caller may have fallen back.
      expect(results.map((each) => each.stats.failedExchanges)).toEqual([0, 0, 0]);
      const { windows, total } = windowsOfAll(results);
      expect(windows.length, 'windows in which all three ran').toBeGreaterThanOrEqual(8);
      const ratios = windows.map((second) => total[second]! / LIMIT);
      console.log(`leasing through a ${delayMs} ms-each-way delay: admitted / limit per window ${ratios.map((ratio) => ratio.toFixed(3)).join(' ')}`);
      // A grant is valid to the end of the service's window, counted from when the request was sent: a late
      // answer shortens it (the callers may admit less) but never carries it into the next window, so the
      // promise holds however late the answers are (within the timeout): no window above 1.10 x the limit.
      for (const ratio of ratios) expect(ratio).toBeLessThanOrEqual(1.1);
      // What a late answer costs is admissions, not a breach: within a 200 ms round trip a grant cut short by
      // the delay is asked for again in time, so every window still gets its limit. At 600 ms an answer can come
      // after its window ended and that window gets less (measured: up to 3 windows of 12 with nothing;
      // packages/client/README.md): that case is held to the upper bound above, the promise for slow replies.
      // Judged on the windows in which every caller kept asking (no gap of STARVED_GAP_MS between its turns).
      if (delayMs <= 100) {
        const offered = windows.filter((second) => results.every((result) => (result.longestGapMs[second] ?? 0) < STARVED_GAP_MS));
        console.log(`leasing through a ${delayMs} ms-each-way delay: lower bound judged on ${offered.length} of ${windows.length} windows (the rest had a caller not run for ${STARVED_GAP_MS} ms or more)`);
        for (const second of offered) expect(total[second]! / LIMIT, `window ${second}`).toBeGreaterThanOrEqual(0.95);
      }
      const recorded = await server.totals();
      expect(recorded.admitted).toBe(Object.values(total).reduce((sum, count) => sum + count, 0));
    },
    60_000,
  );
});

