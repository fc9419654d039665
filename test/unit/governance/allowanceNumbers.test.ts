import { describe, expect, it } from 'vitest';
import { AllowanceNumbers, DISCARD_CELL } from '../../../src/governance/allowanceNumbers.ts';
import { LAST_MS, takeTokens, TOKENS } from '../../../src/governance/tokenBucket.ts';

describe('AllowanceNumbers', () => {
  it('never hands out the discard cell, grows past its first array and keeps what cells held', () => {
    const numbers = new AllowanceNumbers();
    const cells = Array.from({ length: 1000 }, () => numbers.take());
    expect(cells).not.toContain(DISCARD_CELL);
    expect(new Set(cells).size).toBe(cells.length);
    for (const cell of cells) numbers.values[cell + TOKENS] = cell;
    numbers.take();
    for (const cell of cells) expect(numbers.values[cell + TOKENS]).toBe(cell);
  });

  it('reuses a released cell as a bucket not yet started, and ignores releases of the discard cell', () => {
    const numbers = new AllowanceNumbers();
    const cell = numbers.take();
    expect(takeTokens(numbers.values, cell, 5, 1000, 10, 5)).toBe(true);
    expect(takeTokens(numbers.values, cell, 1, 1000, 10, 5)).toBe(false);
    numbers.release(DISCARD_CELL);
    numbers.release(cell);
    const reused = numbers.take();
    expect(reused).toBe(cell);
    expect(Number.isNaN(numbers.values[reused + LAST_MS])).toBe(true);
    // A new bucket starts full at its first instant, whatever the cell held before.
    expect(takeTokens(numbers.values, reused, 5, 2000, 10, 5)).toBe(true);
    expect(numbers.take()).not.toBe(DISCARD_CELL);
  });

  it('refills at the rate up to the burst and adds nothing for an earlier instant', () => {
    const numbers = new AllowanceNumbers();
    const cell = numbers.take();
    expect(takeTokens(numbers.values, cell, 10, 0, 10, 10)).toBe(true);
    expect(takeTokens(numbers.values, cell, 1, -500, 10, 10)).toBe(false);
    expect(takeTokens(numbers.values, cell, 5, 500, 10, 10)).toBe(true);
    expect(takeTokens(numbers.values, cell, 1, 500, 10, 10)).toBe(false);
    expect(takeTokens(numbers.values, cell, 10, 60_000, 10, 10)).toBe(true);
    expect(numbers.values[cell + TOKENS]).toBe(0);
  });
});
