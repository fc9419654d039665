import { describe, expect, it, vi } from 'vitest';
import { createGroupBatcher, type KeyGroup } from '../../../src/command-backlog/keyedBatcher.ts';

type Answer = Array<PromiseSettledResult<string[]>>;

/** A batcher whose batches wait until released, recording each batch as [key, items] pairs. */
function heldBatcher(limits: { maxItemsPerKey: number; maxKeys: number; maxRunning: number }) {
  const batches: Array<Array<[string, number[]]>> = [];
  const releases: Array<() => void> = [];
  const submit = createGroupBatcher<number, string>(async (groups: Array<KeyGroup<number>>): Promise<Answer> => {
    batches.push(groups.map(({ key, items }) => [key, items]));
    await new Promise<void>((resolve) => releases.push(resolve));
    return groups.map(({ key, items }) => ({ status: 'fulfilled', value: items.map((item) => `${key}:${item}`) }));
  }, limits);
  return { submit, batches, releases };
}

describe('createGroupBatcher', () => {
  it('starts at once when idle, gathers what arrives meanwhile across keys, and keeps each key first come first served', async () => {
    const { submit, batches, releases } = heldBatcher({ maxItemsPerKey: 3, maxKeys: 2, maxRunning: 1 });
    const first = submit('a', 1);
    expect(batches).toEqual([[['a', [1]]]]);
    const rest = [2, 3, 4, 5].map((n) => submit('a', n));
    const others = [submit('b', 9), submit('c', 7)];
    releases.shift()!();
    expect(await first).toBe('a:1');
    // At most 3 items of a key and 2 keys a batch; a's left-over waits behind the keys already waiting.
    await vi.waitFor(() => expect(batches[1]).toEqual([['a', [2, 3, 4]], ['b', [9]]]));
    releases.shift()!();
    await vi.waitFor(() => expect(batches[2]).toEqual([['c', [7]], ['a', [5]]]));
    releases.shift()!();
    expect(await Promise.all(rest)).toEqual(['a:2', 'a:3', 'a:4', 'a:5']);
    expect(await Promise.all(others)).toEqual(['b:9', 'c:7']);
  });

  it('runs up to maxRunning batches side by side, never one key in two of them', async () => {
    const { submit, batches, releases } = heldBatcher({ maxItemsPerKey: 10, maxKeys: 1, maxRunning: 2 });
    const answers = [submit('a', 1), submit('a', 2), submit('b', 1), submit('c', 1)];
    // a and b run (one key a batch); a's second item and c wait: two batches run already.
    expect(batches).toEqual([[['a', [1]]], [['b', [1]]]]);
    releases.shift()!();
    // a is free again on the next turn: its waiting item and c compete; a waited first.
    await vi.waitFor(() => expect(batches[2]).toEqual([['a', [2]]]));
    releases.shift()!();
    await vi.waitFor(() => expect(batches[3]).toEqual([['c', [1]]]));
    releases.splice(0).forEach((release) => release());
    expect(await Promise.all(answers)).toEqual(['a:1', 'a:2', 'b:1', 'c:1']);
  });

  it('lets callers answered by one batch join the next one together', async () => {
    const batches: number[][] = [];
    const submit = createGroupBatcher<number, number>(
      async (groups) => {
        batches.push(groups[0]!.items);
        return groups.map(({ items }) => ({ status: 'fulfilled', value: items }));
      },
      { maxItemsPerKey: 100, maxKeys: 6, maxRunning: 1 },
    );
    // Four closed-loop callers, each enqueueing again as soon as it is answered.
    await Promise.all(
      [0, 1, 2, 3].map(async (caller) => {
        for (let round = 0; round < 3; round++) await submit('a', caller);
      }),
    );
    // The first caller starts alone; from then on every answered caller is back in time for the next batch.
    expect(batches).toEqual([[0], [1, 2, 3, 0], [1, 2, 3, 0], [1, 2, 3]]);
  });

  it('fails only the group that failed, every item of a batch that threw, and goes on with the next', async () => {
    const submit = createGroupBatcher<number, number>(
      async (groups) => {
        if (groups.some(({ key }) => key === 'down')) throw new Error('database away');
        return groups.map(({ key, items }) =>
          key === 'bad' ? { status: 'rejected', reason: new Error(`${key} failed`) } : { status: 'fulfilled', value: items },
        );
      },
      { maxItemsPerKey: 10, maxKeys: 6, maxRunning: 1 },
    );
    const started = submit('warm', 0);
    const good = submit('good', 1);
    const bad = submit('bad', 2);
    expect(await started).toBe(0);
    await expect(bad).rejects.toThrow('bad failed');
    expect(await good).toBe(1);
    // Submitted in the turn the last batch was answered in: its keys free up only on the next turn, so both
    // wait and go in one batch, which throws.
    const thrown = [submit('down', 3), submit('good', 4)];
    await expect(thrown[0]).rejects.toThrow('database away');
    await expect(thrown[1]).rejects.toThrow('database away');
    expect(await submit('good', 5)).toBe(5);
  });
});
