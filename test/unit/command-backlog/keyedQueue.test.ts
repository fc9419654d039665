import { describe, expect, it } from 'vitest';
import { createKeyedQueue } from '../../../src/command-backlog/stream/keyedQueue.ts';

describe('createKeyedQueue', () => {
  it('runs one key at a time, in order, other keys alongside, and survives a failing task', async () => {
    const run = createKeyedQueue();
    const log: string[] = [];
    let releaseFirst!: () => void;
    const first = run('t1', async () => {
      log.push('t1-a start');
      await new Promise<void>((resolve) => (releaseFirst = resolve));
      log.push('t1-a end');
      throw new Error('boom');
    });
    const second = run('t1', async () => {
      log.push('t1-b');
      return 'b';
    });
    const other = run('t2', async () => {
      log.push('t2');
      return 't2';
    });
    expect(await other).toBe('t2');
    expect(log).toEqual(['t1-a start', 't2']);
    releaseFirst();
    await expect(first).rejects.toThrow('boom');
    expect(await second).toBe('b');
    expect(log).toEqual(['t1-a start', 't2', 't1-a end', 't1-b']);
  });
});
