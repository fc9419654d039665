// Token bucket with explicit time: callers pass the instant to meter at (arrival time for EGRESS, each
// message's send time for BACKLOG), so a backlog drained after a restart is charged as it happened.
// Rate and burst come in with every call, so a changed limit (or the half limit of a Redis outage) applies
// at once without rebuilding state.
//
// A bucket is two numbers, the tokens it held and the instant it held them at (NaN: not started yet). The
// arithmetic below is the only one: the Governor keeps its readings buckets unboxed in cells of
// AllowanceNumbers (`takeTokens` and friends), and everything else (message charges, the edge limit) uses a
// `TokenBucket` object; both go through `tokensAt`, `wholeTokens` and `secondsUntil`.

/** Offsets of a bucket's two numbers in a cell of a Float64Array (AllowanceNumbers puts rate and burst after them). */
export const TOKENS = 0;
export const LAST_MS = 1;

/**
 * Tokens a bucket holds at `atMs` when it held `tokens` at `lastMs`: a bucket not started (NaN) starts full;
 * an instant earlier than the last one (out-of-order send times) adds nothing, but a lowered burst still caps.
 * The bucket's last instant becomes `atMs` exactly when `!(atMs <= lastMs)` (see `laterMs`).
 */
export function tokensAt(tokens: number, lastMs: number, atMs: number, ratePerSecond: number, burst: number): number {
  if (Number.isNaN(lastMs)) return burst;
  if (atMs > lastMs) tokens += ((atMs - lastMs) * ratePerSecond) / 1000;
  return tokens < burst ? tokens : burst;
}

/** The bucket's last instant after metering at `atMs`: time never goes back. */
export function laterMs(lastMs: number, atMs: number): number {
  return atMs <= lastMs ? lastMs : atMs;
}

/** Whole tokens left, for the `remaining` answer. */
export function wholeTokens(tokens: number): number {
  return tokens > 0 ? Math.floor(tokens) : 0;
}

/** Seconds until `units` (at most a full bucket) would fit; at least 1, as Retry-After counts whole seconds. */
export function secondsUntil(tokens: number, units: number, ratePerSecond: number, burst: number): number {
  const seconds = Math.ceil(((units < burst ? units : burst) - tokens) / ratePerSecond);
  return seconds > 1 ? seconds : 1;
}

/** Takes `units` (weighted cost) from the bucket in `values` at `cell` if it holds them at `atMs`; all or nothing. */
export function takeTokens(values: Float64Array, cell: number, units: number, atMs: number, ratePerSecond: number, burst: number): boolean {
  const lastMs = values[cell + LAST_MS]!;
  const tokens = tokensAt(values[cell + TOKENS]!, lastMs, atMs, ratePerSecond, burst);
  values[cell + LAST_MS] = laterMs(lastMs, atMs);
  const admitted = tokens >= units;
  values[cell + TOKENS] = admitted ? tokens - units : tokens;
  return admitted;
}

export function remainingTokens(values: Float64Array, cell: number): number {
  return wholeTokens(values[cell + TOKENS]!);
}

export function tokensRetryAfterSeconds(values: Float64Array, cell: number, units: number, ratePerSecond: number, burst: number): number {
  return secondsUntil(values[cell + TOKENS]!, units, ratePerSecond, burst);
}

/** A bucket of its own: the message charge of an allowance, a client of the edge limit. */
export class TokenBucket {
  tokens = 0;
  /** NaN until the first take. */
  lastMs = Number.NaN;

  /** Takes `units` (weighted cost) if the bucket holds them at `atMs`; all or nothing. */
  take(units: number, atMs: number, ratePerSecond: number, burst: number): boolean {
    const tokens = tokensAt(this.tokens, this.lastMs, atMs, ratePerSecond, burst);
    this.lastMs = laterMs(this.lastMs, atMs);
    const admitted = tokens >= units;
    this.tokens = admitted ? tokens - units : tokens;
    return admitted;
  }

  remaining(): number {
    return wholeTokens(this.tokens);
  }

  retryAfterSeconds(units: number, ratePerSecond: number, burst: number): number {
    return secondsUntil(this.tokens, units, ratePerSecond, burst);
  }
}
