// The numbers an admit reads and writes, for every tenant and allowance, side by side in one Float64Array:
// a tenant's cell holds its refresh-due and last-seen times, an allowance's cell its bucket (tokens, last refill
// time), rate and burst. As object fields they would be boxed heap numbers (Unix ms and fractional tokens are
// not small integers), each one more dependent cache miss per admit with thousands of tenants; here they are
// unboxed, and a tenant's cell and its first allowance's cell are made one after the other, so they share a
// cache line or sit side by side. The array grows by doubling; cells of evicted names go on a free list.
// One store per Governor (held by its TenantNames).
import { WINDOW_CELL_SIZE } from './fixedWindow.ts';
import { LAST_MS } from './tokenBucket.ts';

/** Cell offset 0 is never handed out: an evicted name's state writes there, so it cannot touch a reused cell. */
export const DISCARD_CELL = 0;

// A tenant's cell.
export const REFRESH_DUE_MS = 0;
export const LAST_SEEN_MS = 1;

// An allowance's cell: its readings bucket (TOKENS, LAST_MS of tokenBucket.ts, which does the arithmetic),
// then the rate and burst it meters at, then the admissions admit's fast path tallied in the cell (see
// AllowanceState): the second they lie in (NaN: none may be tallied here), their
// messages and their units: these first 8 numbers, 64 bytes, are a cache line, so tallying an admission touches
// no memory the decision did not. The second line holds the shadow limit's bucket (SHADOW + TOKENS, SHADOW +
// LAST_MS), rate and burst: a limit with mode SHADOW decided beside the enforced one, which never refuses (a
// rate of 0: none); only a shadowed allowance, which never takes the fast path, reads it. An allowance metered
// by a fixed window (fixedWindow.ts) keeps the window there instead of a readings bucket: its admitted count and
// second in TOKENS and LAST_MS, the rest at 7 and 12-14, the places left free here (WINDOW_CELL_SIZE).
export const RATE_PER_SECOND = 2;
export const BURST = 3;
export const TALLY_SECOND = 4;
export const TALLY_MESSAGES = 5;
export const TALLY_UNITS = 6;
export const SHADOW = 8;
export const SHADOW_RATE_PER_SECOND = 10;
export const SHADOW_BURST = 11;
const STRIDE = 16;
if (WINDOW_CELL_SIZE > STRIDE) throw new Error('a fixed window does not fit in an allowance cell');

export class AllowanceNumbers {
  values = new Float64Array(STRIDE * 256);
  private used = 1;
  private readonly free: number[] = [];

  /**
   * A cell of zeros but for NaN LAST_MS and SHADOW + LAST_MS (buckets not yet started) and a NaN TALLY_SECOND (nothing to be
   * tallied in it); returns the offset of its first number.
   */
  take(): number {
    let offset = this.free.pop();
    if (offset === undefined) {
      offset = this.used * STRIDE;
      if (offset + STRIDE > this.values.length) {
        const grown = new Float64Array(this.values.length * 2);
        grown.set(this.values);
        this.values = grown;
      }
      this.used++;
    }
    this.values.fill(0, offset, offset + STRIDE);
    this.values[offset + LAST_MS] = Number.NaN;
    this.values[offset + TALLY_SECOND] = Number.NaN;
    this.values[offset + SHADOW + LAST_MS] = Number.NaN;
    return offset;
  }

  release(offset: number): void {
    if (offset !== DISCARD_CELL) this.free.push(offset);
  }
}
