// Token bucket with explicit time: callers pass the instant to meter at (arrival time for EGRESS, each
// message's send time for BACKLOG), so a backlog drained after a restart is charged as it happened.
// Rate and burst come in with every call, so a changed limit (or the half limit of a Redis outage) applies
// at once without rebuilding state.

export class TokenBucket {
  tokens = 0;
  lastMs = 0;
  started = false;

  /** Takes `units` (weighted cost) if the bucket holds them at `atMs`; all or nothing. */
  take(units: number, atMs: number, ratePerSecond: number, burst: number): boolean {
    this.refill(atMs, ratePerSecond, burst);
    if (this.tokens >= units) {
      this.tokens -= units;
      return true;
    }
    return false;
  }

  refill(atMs: number, ratePerSecond: number, burst: number): void {
    if (!this.started) {
      this.started = true;
      this.tokens = burst;
      this.lastMs = atMs;
    } else if (atMs > this.lastMs) {
      const tokens = this.tokens + ((atMs - this.lastMs) * ratePerSecond) / 1000;
      this.tokens = tokens < burst ? tokens : burst;
      this.lastMs = atMs;
    } else if (this.tokens > burst) {
      // An instant earlier than the last one (out-of-order send times) adds nothing; a lowered burst still caps.
      this.tokens = burst;
    }
  }

  /** Whole tokens left, for the `remaining` answer. */
  remaining(): number {
    return this.tokens > 0 ? Math.floor(this.tokens) : 0;
  }

  /** Seconds until `units` (at most a full bucket) would fit; at least 1, as Retry-After counts whole seconds. */
  retryAfterSeconds(units: number, ratePerSecond: number, burst: number): number {
    const needed = (units < burst ? units : burst) - this.tokens;
    const seconds = Math.ceil(needed / ratePerSecond);
    return seconds > 1 ? seconds : 1;
  }
}
