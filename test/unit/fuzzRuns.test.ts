// The fuzz suites' run counting (test/support/fuzzRuns.ts) must be able to fail: a property stopped by its time
// limit, a run past its bound (a hang) and a deferred check that fails each leave it short of its planned runs.
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fuzzExactly } from '../support/fuzzRuns.ts';

const plan = { name: 'counting', runs: 20, runTimeoutMs: 1_000, timeLimitMs: 10_000 };

describe('fuzzExactly', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('passes and prints the count when every planned run completes', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const outcome = await fuzzExactly(plan, fc.integer(), async () => {});
    expect(outcome).toMatchObject({ planned: 20, completed: 20 });
    expect(log.mock.calls.flat().join('\n')).toMatch(/^fuzz: 20 of 20 runs \(counting;/m);
    log.mockRestore();
  });

  it('fails when the time limit stops the property short of its planned runs', async () => {
    const slow = () => new Promise<void>((resolve) => setTimeout(resolve, 100));
    await expect(fuzzExactly({ ...plan, timeLimitMs: 500 }, fc.integer(), slow)).rejects.toThrow(/counting: \d of 20 runs completed/);
  });

  it('fails a run that takes longer than its bound (a hang)', async () => {
    const hang = () => new Promise<void>(() => {});
    await expect(fuzzExactly({ ...plan, runTimeoutMs: 50 }, fc.integer(), hang)).rejects.toThrow(/0 of 20 runs completed/);
  });

  it('fails when a deferred check fails, taking its run off the count', async () => {
    // The first run's check fails late, whatever value fast-check draws for it.
    let run = 0;
    const outcome = fuzzExactly(plan, fc.integer({ min: 0, max: 9 }), async (_value, defer) => {
      if (run++ === 0) defer('a late answer', Promise.reject(new Error('no answer')));
    });
    await expect(outcome).rejects.toThrow(/deferred check\(s\) failed:\na late answer: no answer/);
  });

  it('plans FUZZ_RUNS runs when it is set', async () => {
    vi.stubEnv('FUZZ_RUNS', '7');
    await expect(fuzzExactly(plan, fc.integer(), async () => {})).resolves.toMatchObject({ planned: 7, completed: 7 });
    vi.stubEnv('FUZZ_RUNS', 'many');
    await expect(fuzzExactly(plan, fc.integer(), async () => {})).rejects.toThrow(/FUZZ_RUNS must be a whole number/);
  });
});
