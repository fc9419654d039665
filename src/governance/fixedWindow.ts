// Fixed one-second window (API_REQUESTS, the OpenRUM project limit), with the two over-limit policies:
// EXACT_REJECT (first come, first served up to the limit) and STABLE_DOWNSAMPLE.
//
// STABLE_DOWNSAMPLE: at the start of each window a keep fraction is fixed from the previous window's offered
// load, keep = min(1, limit / offeredInPreviousWindow). A caller is kept for the whole window when its stable
// hash fraction is below keep, so it is wholly in or wholly out within a window, and at a steady load about
// `limit` is admitted. A hard cap of 2 x limit per window bounds the worst case (a window right after a quiet
// one keeps everyone, and a few heavy callers can all hash in): at most twice the limit, never more.
//
// A window's numbers live in a cell of a Float64Array, as a token bucket's do (tokenBucket.ts): an allowance
// metered by a window keeps them in its cell of AllowanceNumbers, unboxed. As an object's fields (a Unix second,
// a fraction) they were a FixedWindow and four boxed heap numbers for every tenant using the admission API, a
// fifth of the admitting thread's heap objects at 50,000 active tenants (bench/RESULTS.md). The FixedWindow
// class keeps a cell of its own, for the rarer windows (a shadow limit's, a limit preview's replay).
import { LAST_MS, TOKENS } from './tokenBucket.ts';

// Offsets in the cell. A window's allowance has no readings bucket: the admitted count and the window's second
// take the bucket's places (on the line a decision reads); the rest go where AllowanceNumbers leaves room.
const ADMITTED = TOKENS;
/** The window's Unix second; NaN before the first (as a bucket's LAST_MS starts). */
const SECOND = LAST_MS;
const OFFERED = 7;
const KEEP_FRACTION = 12;
/** 1 once charged through shared counters: this replica sees only its own share of the offered load. */
const SHARED = 13;
/** 1 when a kept caller was refused in this window (shared mode: the shared budget ran out). */
const CUT = 14;
/** Numbers a window's cell spans. */
export const WINDOW_CELL_SIZE = 15;

function roll(values: Float64Array, cell: number, second: number, limit: number): void {
  const windowSecond = values[cell + SECOND]!;
  if (second <= windowSecond) return;
  const consecutive = second === windowSecond + 1;
  const offered = values[cell + OFFERED]!;
  const previousOffered = consecutive ? offered : 0;
  const estimate = previousOffered > limit ? limit / previousOffered : 1;
  if (values[cell + SHARED] === 0 || !consecutive) values[cell + KEEP_FRACTION] = estimate;
  else if (values[cell + CUT] === 1) values[cell + KEEP_FRACTION] = Math.min(estimate, values[cell + ADMITTED]! / previousOffered);
  else values[cell + KEEP_FRACTION] = Math.min(estimate, values[cell + KEEP_FRACTION]! * 2);
  values[cell + SECOND] = second;
  values[cell + ADMITTED] = 0;
  values[cell + OFFERED] = 0;
  values[cell + CUT] = 0;
}

/** EXACT_REJECT: admits `units` if the window has room for them. */
export function windowTakeExact(values: Float64Array, cell: number, units: number, second: number, limit: number): boolean {
  roll(values, cell, second, limit);
  values[cell + OFFERED]! += units;
  if (values[cell + ADMITTED]! + units > limit) return false;
  values[cell + ADMITTED]! += units;
  return true;
}

/** STABLE_DOWNSAMPLE; `callerFraction` is the caller's stableCallerFraction. */
export function windowTakeDownsampled(values: Float64Array, cell: number, units: number, second: number, limit: number, callerFraction: number): boolean {
  roll(values, cell, second, limit);
  values[cell + OFFERED]! += units;
  if (values[cell + ADMITTED]! + units > 2 * limit) return false;
  const keepFraction = values[cell + KEEP_FRACTION]!;
  if (keepFraction < 1 && callerFraction >= keepFraction) return false;
  values[cell + ADMITTED]! += units;
  return true;
}

/**
 * Only the hash decision, for shared counters (Redis): the budget is charged there, so this counts the offer
 * and reports the outcome through windowSharedOutcome. A replica sees only its share of the offered load, so
 * when the shared budget cut kept callers, the next window keeps only the fraction that was admitted; without
 * a cut the fraction doubles back towards the local estimate, window by window.
 */
export function windowKeeps(values: Float64Array, cell: number, units: number, second: number, limit: number, callerFraction: number): boolean {
  values[cell + SHARED] = 1;
  roll(values, cell, second, limit);
  values[cell + OFFERED]! += units;
  const keepFraction = values[cell + KEEP_FRACTION]!;
  return keepFraction >= 1 || callerFraction < keepFraction;
}

export function windowSharedOutcome(values: Float64Array, cell: number, units: number, admitted: boolean): void {
  if (admitted) values[cell + ADMITTED]! += units;
  else values[cell + CUT] = 1;
}

export function windowRemaining(values: Float64Array, cell: number, limit: number): number {
  const admitted = values[cell + ADMITTED]!;
  return admitted < limit ? limit - admitted : 0;
}

/** Whole seconds until the next window opens; at least 1. */
export function windowRetryAfterSeconds(values: Float64Array, cell: number, atMs: number): number {
  const seconds = Math.ceil(((values[cell + SECOND]! + 1) * 1000 - atMs) / 1000);
  return seconds > 1 ? seconds : 1;
}

/** Starts a window's numbers in a cell of zeros: no window yet. */
export function startWindow(values: Float64Array, cell: number): void {
  values[cell + SECOND] = Number.NaN;
  values[cell + KEEP_FRACTION] = 1;
}

/** A window with a cell of its own. */
export class FixedWindow {
  private readonly values = new Float64Array(WINDOW_CELL_SIZE);

  constructor() {
    startWindow(this.values, 0);
  }

  takeExact(units: number, second: number, limit: number): boolean {
    return windowTakeExact(this.values, 0, units, second, limit);
  }

  takeDownsampled(units: number, second: number, limit: number, callerFraction: number): boolean {
    return windowTakeDownsampled(this.values, 0, units, second, limit, callerFraction);
  }

  keeps(units: number, second: number, limit: number, callerFraction: number): boolean {
    return windowKeeps(this.values, 0, units, second, limit, callerFraction);
  }

  sharedOutcome(units: number, admitted: boolean): void {
    windowSharedOutcome(this.values, 0, units, admitted);
  }

  remaining(limit: number): number {
    return windowRemaining(this.values, 0, limit);
  }

  retryAfterSeconds(atMs: number): number {
    return windowRetryAfterSeconds(this.values, 0, atMs);
  }
}
