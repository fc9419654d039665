import { describe, expect, it, vi } from 'vitest';
import { createKeyedBatcher } from '../../../src/commands/keyedBatcher.ts';

describe('createKeyedBatcher', () => {
  it('starts at once when idle, batches what arrives meanwhile, keeps keys apart, and caps batch size', async () => {
    const batches: Array<[string, number[]]> = [];
    const releases: Array<() => void> = [];
    const submit = createKeyedBatcher<number, string>(async (key, items) => {
      batches.push([key, items]);
      await new Promise<void>((resolve) => releases.push(resolve));
      return items.map((item) => `${key}:${item}`);
    }, 3);

    const first = submit('a', 1);
    const rest = [2, 3, 4, 5].map((n) => submit('a', n));
    const other = submit('b', 9);
    expect(batches).toEqual([
      ['a', [1]],
      ['b', [9]],
    ]);
    releases.shift()!();
    expect(await first).toBe('a:1');
    await vi.waitFor(() => expect(batches[2]).toEqual(['a', [2, 3, 4]]));
    releases.shift()!();
    expect(await other).toBe('b:9');
    releases.shift()!();
    await vi.waitFor(() => expect(batches[3]).toEqual(['a', [5]]));
    releases.shift()!();
    expect(await Promise.all(rest)).toEqual(['a:2', 'a:3', 'a:4', 'a:5']);
  });

  it('lets callers answered by one batch join the next one together', async () => {
    const batches: number[][] = [];
    const submit = createKeyedBatcher<number, number>(async (_key, items) => {
      batches.push(items);
      return items;
    }, 100);
    // Four closed-loop callers, each enqueueing again as soon as it is answered.
    await Promise.all([0, 1, 2, 3].map(async (caller) => {
      for (let round = 0; round < 3; round++) await submit('a', caller);
    }));
    // The first caller starts alone; from then on every answered caller is back in time for the next batch.
    expect(batches).toEqual([[0], [1, 2, 3, 0], [1, 2, 3, 0], [1, 2, 3]]);
  });

  it('fails every item of a failed batch and goes on with the next', async () => {
    let calls = 0;
    const submit = createKeyedBatcher<number, number>(async (_key, items) => {
      calls++;
      if (calls === 1) throw new Error('database away');
      return items;
    }, 10);
    await expect(submit('a', 1)).rejects.toThrow('database away');
    expect(await submit('a', 2)).toBe(2);
  });
});
