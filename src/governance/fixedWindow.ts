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
  /** Charged through shared counters: this replica sees only its own share of the offered load. */
  shared = false;
  /** A kept caller was refused in this window (shared mode: the shared budget ran out). */
  cut = false;

  private roll(second: number, limit: number): void {
    if (second <= this.windowSecond) return;
    const consecutive = second === this.windowSecond + 1;
    const previousOffered = consecutive ? this.offered : 0;
    const estimate = previousOffered > limit ? limit / previousOffered : 1;
    if (!this.shared || !consecutive) this.keepFraction = estimate;
    else if (this.cut) this.keepFraction = Math.min(estimate, this.admitted / previousOffered);
    else this.keepFraction = Math.min(estimate, this.keepFraction * 2);
    this.windowSecond = second;
    this.admitted = 0;
    this.offered = 0;
    this.cut = false;
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

  /**
   * Only the hash decision, for shared counters (Redis): the budget is charged there, so this counts the offer
   * and reports the outcome through sharedOutcome. A replica sees only its share of the offered load, so when
   * the shared budget cut kept callers, the next window keeps only the fraction that was admitted; without a
   * cut the fraction doubles back towards the local estimate, window by window.
   */
  keeps(units: number, second: number, limit: number, callerFraction: number): boolean {
    this.shared = true;
    this.roll(second, limit);
    this.offered += units;
    return this.keepFraction >= 1 || callerFraction < this.keepFraction;
  }

  sharedOutcome(units: number, admitted: boolean): void {
    if (admitted) this.admitted += units;
    else this.cut = true;
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
