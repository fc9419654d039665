// The Recorder's estimate of the database's clock (src/ledger/storeClock.ts), which places UTC midnights for summary
// references: read off the flush path about once a minute, unknown before a reading and once one is too old.
import { describe, expect, it } from 'vitest';
import { DRIFT_ALLOWANCE_MS, READ_EVERY_MS, READING_KEPT_MS, RETRY_AFTER_MS, StoreClock } from '../../../src/ledger/storeClock.ts';

const AHEAD_MS = 3 * 60_000;

/** Asks for a reading when one is due, and lets it settle (the reader answers at once). */
async function readIfDue(clock: StoreClock): Promise<void> {
  clock.readIfDue();
  await new Promise((resolve) => setImmediate(resolve));
}

describe('the store clock', () => {
  it('is unknown until read, then the local clock plus the offset measured, with half the round trip and the drift allowance as its error', async () => {
    let local = 1_800_000_000_000;
    let reads = 0;
    const clock = new StoreClock(async () => {
      reads++;
      local += 40; // a 40 ms round trip; the store answers from its middle
      return local - 20 + AHEAD_MS;
    }, () => local);
    expect(clock.at(local)).toEqual({ nowMs: local, errorMs: null });
    clock.readIfDue();
    clock.readIfDue(); // one reading at a time
    await new Promise((resolve) => setImmediate(resolve));
    expect(reads).toBe(1);
    expect(clock.at(local + 5_000)).toEqual({ nowMs: local + 5_000 + AHEAD_MS, errorMs: 20 + DRIFT_ALLOWANCE_MS });
    // Not read again within a minute; read again after it.
    local += READ_EVERY_MS - 1_000;
    await readIfDue(clock);
    expect(reads).toBe(1);
    local += 2_000;
    await readIfDue(clock);
    expect(reads).toBe(2);
  });

  it('keeps the last reading through a failed one, retries no sooner than RETRY_AFTER_MS, and forgets a reading older than READING_KEPT_MS', async () => {
    let local = 1_800_000_000_000;
    let failing = false;
    let reads = 0;
    const clock = new StoreClock(async () => {
      reads++;
      if (failing) throw new Error('the database does not answer');
      return local + AHEAD_MS;
    }, () => local);
    await readIfDue(clock);
    failing = true;
    local += READ_EVERY_MS;
    await readIfDue(clock);
    expect(reads).toBe(2);
    expect(clock.at(local).nowMs).toBe(local + AHEAD_MS);
    local += RETRY_AFTER_MS - 1;
    await readIfDue(clock);
    expect(reads).toBe(2);
    local += 1;
    await readIfDue(clock);
    expect(reads).toBe(3);
    local = 1_800_000_000_000 + READING_KEPT_MS + 1;
    expect(clock.at(local)).toEqual({ nowMs: local, errorMs: null });
  });

  it('without a clock to read (a store that keeps no day partitions), is never known and reads nothing', () => {
    const clock = new StoreClock(undefined, () => 5);
    clock.readIfDue();
    expect(clock.at(5)).toEqual({ nowMs: 5, errorMs: null });
  });
});
