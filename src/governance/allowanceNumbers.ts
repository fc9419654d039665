// The numbers an admit reads and writes, for every tenant and allowance, side by side in one Float64Array:
// a tenant's cell holds its refresh-due and last-seen times, an allowance's cell its bucket (tokens, last refill
// time), rate and burst. As object fields they would be boxed heap numbers (Unix ms and fractional tokens are
// not small integers), each one more dependent cache miss per admit with thousands of tenants; here they are
// unboxed, and a tenant's cell and its first allowance's cell are made one after the other, so they share a
// cache line or sit side by side. The array grows by doubling; cells of evicted names go on a free list.
// One store per Governor (held by its TenantNames).

/** Cell offset 0 is never handed out: an evicted name's state writes there, so it cannot touch a reused cell. */
export const DISCARD_CELL = 0;

// A tenant's cell.
export const REFRESH_DUE_MS = 0;
export const LAST_SEEN_MS = 1;

// An allowance's cell.
export const TOKENS = 0;
export const LAST_MS = 1;
export const RATE_PER_SECOND = 2;
export const BURST = 3;
const STRIDE = 4;

export class AllowanceNumbers {
  values = new Float64Array(STRIDE * 256);
  private used = 1;
  private readonly free: number[] = [];

  /** A cell of zeros but for a NaN LAST_MS (a bucket not yet started); returns the offset of its first number. */
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
    return offset;
  }

  release(offset: number): void {
    if (offset !== DISCARD_CELL) this.free.push(offset);
  }
}

// The readings bucket of a cell: the arithmetic of TokenBucket, with a NaN last time for "not started yet".

/** Takes `units` (weighted cost) if the cell's bucket holds them at `atMs`; all or nothing. */
export function takeTokens(values: Float64Array, cell: number, units: number, atMs: number, ratePerSecond: number, burst: number): boolean {
  let tokens = values[cell + TOKENS]!;
  const lastMs = values[cell + LAST_MS]!;
  if (Number.isNaN(lastMs)) {
    // A new bucket starts full at its first instant.
    tokens = burst;
    values[cell + LAST_MS] = atMs;
  } else if (atMs > lastMs) {
    tokens += ((atMs - lastMs) * ratePerSecond) / 1000;
    if (!(tokens < burst)) tokens = burst;
    values[cell + LAST_MS] = atMs;
  } else if (tokens > burst) {
    // An instant earlier than the last one (out-of-order send times) adds nothing; a lowered burst still caps.
    tokens = burst;
  }
  const admitted = tokens >= units;
  values[cell + TOKENS] = admitted ? tokens - units : tokens;
  return admitted;
}

/** Whole tokens left, for the `remaining` answer. */
export function remainingTokens(values: Float64Array, cell: number): number {
  const tokens = values[cell + TOKENS]!;
  return tokens > 0 ? Math.floor(tokens) : 0;
}

/** Seconds until `units` (at most a full bucket) would fit; at least 1, as Retry-After counts whole seconds. */
export function tokensRetryAfterSeconds(values: Float64Array, cell: number, units: number, ratePerSecond: number, burst: number): number {
  const needed = (units < burst ? units : burst) - values[cell + TOKENS]!;
  const seconds = Math.ceil(needed / ratePerSecond);
  return seconds > 1 ? seconds : 1;
}
