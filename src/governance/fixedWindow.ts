// Fixed one-second window (API_REQUESTS, the OpenRUM project limit), with the two over-limit policies:
// EXACT_REJECT (first come, first served up to the limit) and STABLE_DOWNSAMPLE.
//
// STABLE_DOWNSAMPLE: at the start of each window a keep fraction is fixed from the previous window's offered
// load, keep = min(1, limit / offeredInPreviousWindow). A caller is kept for the whole window when its stable
// hash fraction is below keep, so it is wholly in or wholly out within a window, and at a steady load about
// `limit` is admitted. A hard cap of 2 x limit per window bounds the worst case (a window right after a quiet
// one keeps everyone, and a few heavy callers can all hash in): at most twice the limit, never more.

export class FixedWindow {
  windowSecond = Number.NEGATIVE_INFINITY;
  admitted = 0;
  offered = 0;
  keepFraction = 1;

  private roll(second: number, limit: number): void {
    if (second <= this.windowSecond) return;
    const previousOffered = second === this.windowSecond + 1 ? this.offered : 0;
    this.keepFraction = previousOffered > limit ? limit / previousOffered : 1;
    this.windowSecond = second;
    this.admitted = 0;
    this.offered = 0;
  }

  takeExact(units: number, second: number, limit: number): boolean {
    this.roll(second, limit);
    this.offered += units;
    if (this.admitted + units > limit) return false;
    this.admitted += units;
    return true;
  }

  /** `callerFraction` is the caller's stableCallerFraction. */
  takeDownsampled(units: number, second: number, limit: number, callerFraction: number): boolean {
    this.roll(second, limit);
    this.offered += units;
    if (this.admitted + units > 2 * limit) return false;
    if (this.keepFraction < 1 && callerFraction >= this.keepFraction) return false;
    this.admitted += units;
    return true;
  }

  remaining(limit: number): number {
    return this.admitted < limit ? limit - this.admitted : 0;
  }

  /** Whole seconds until the next window opens; at least 1. */
  retryAfterSeconds(atMs: number): number {
    const seconds = Math.ceil(((this.windowSecond + 1) * 1000 - atMs) / 1000);
    return seconds > 1 ? seconds : 1;
  }
}
