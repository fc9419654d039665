// Replays recorded demand through a limiter: the governance library's own TokenBucket (rate dimensions) or
// FixedWindow (API_REQUESTS, EXACT_REJECT), with the numbers of the limit asked about, so a preview decides as
// the Governor would. Nothing here reads or writes anything but its arguments.
//
// What the ledger keeps of a second is its totals (units and messages offered), not each request: a second's
// units are replayed as its messages, each of an equal share of the units, evenly spaced within the second
// (at most MAX_STEPS_PER_SECOND of them; more messages are replayed in that many equal steps). Traffic sent in
// a burst at the start of a second is refused a little more by a real limiter than by the replay.
import { FixedWindow, TokenBucket } from '../governance/index.ts';
import type { DemandSeries } from './readDemand.ts';

/** Steps a second's demand is replayed in, at most (one per message below this). */
export const MAX_STEPS_PER_SECOND = 100;

export interface ReplayLimit {
  kind: 'TOKEN_BUCKET' | 'FIXED_WINDOW';
  ratePerSecond: number;
  /** The bucket size; a fixed window's limit per window is `ratePerSecond`. */
  burst: number;
}

/** For each number of steps, each step's offset in its second (ms): `floor(step * 1000 / steps)`, worked out once. */
const STEP_OFFSETS_MS: readonly Int32Array[] = Array.from({ length: MAX_STEPS_PER_SECOND + 1 }, (_, steps) =>
  Int32Array.from({ length: steps }, (_, step) => Math.floor((step * 1000) / steps)),
);

/** What a limiter would have refused of one tenant's demand. */
export class RefusalTally {
  refusedUnits = 0;
  refusedMessages = 0;
  /** Seconds in which something was refused, summed over the tenant's allowances. */
  limitedSeconds = 0;
  /** Refused units per minute (unix second of the minute's start). */
  readonly byMinute = new Map<number, number>();

  addMinute(start: number, refusedUnits: number): void {
    this.byMinute.set(start, (this.byMinute.get(start) ?? 0) + refusedUnits);
  }

  worstMinute(): { start: number; refusedUnits: number } | null {
    let worst: { start: number; refusedUnits: number } | null = null;
    for (const [start, refusedUnits] of this.byMinute) {
      if (refusedUnits > 0 && (worst === null || refusedUnits > worst.refusedUnits || (refusedUnits === worst.refusedUnits && start < worst.start))) {
        worst = { start, refusedUnits };
      }
    }
    return worst;
  }
}

/** The most units of any one second of the series. */
export function peakUnits(series: DemandSeries): number {
  let peak = 0;
  for (let i = 0; i < series.units.length; i++) if (series.units[i]! > peak) peak = series.units[i]!;
  return peak;
}

// Below the bound by this much relative margin, so that the float sums of a second's steps cannot cross it.
const MARGIN = 1 - 1e-9;

/**
 * Whether the limit cannot refuse anything of demand peaking at `peak` units a second, so its replay can be
 * skipped: a fixed window refuses only a second over its limit; a bucket starting full admits every stretch
 * of L seconds that asks at most burst + rate x L, and seconds of at most `peak` evenly spaced steps ask at
 * most peak x (L + 2) of any stretch of L seconds (the stretch's whole seconds and two partial ones), which
 * is within that when peak <= rate and 2 x peak <= burst.
 */
export function cannotRefuse(limit: ReplayLimit, peak: number): boolean {
  if (limit.kind === 'FIXED_WINDOW') return peak <= limit.ratePerSecond * MARGIN;
  return peak <= limit.ratePerSecond * MARGIN && 2 * peak <= limit.burst * MARGIN;
}

/**
 * A second's `steps` equal takes of `units` each, at `startMs + offsets[k]`, taken from `bucket` at once where
 * the outcome has a closed form; answers how many were refused, or -1 where it has none (the caller takes them
 * one by one). Most of a preview's time was these takes (a 7-day preview of 1,000 tenants: 120 M of them), and
 * nearly every second falls in one of two cases:
 *
 * - a heavy second, whose takes each ask more than the bucket refills between two of them (rate x the widest
 *   gap <= units) and whose bucket holds at least two takes: no take meets the cap (below it before the first,
 *   the tokens only fall or stay under two takes), and take k is admitted while the number admitted before it
 *   is below F(k) = floor((T0 + rate x offset(k)) / units), T0 the tokens at the first take. F(k) - k then
 *   never rises with k, so of the second's takes min(steps, F(last)) are admitted, and the bucket is left with
 *   T0 + rate x offset(last) - admitted x units;
 * - a light second on a full bucket, whose takes each ask less than the bucket refills between two of them
 *   (rate x the narrowest gap > units): every take is admitted and refilled to the cap before the next, which
 *   leaves the bucket a take short of full.
 *
 * The closed form is the steps' arithmetic done once instead of step by step, so the two agree but for the last
 * bits of the floating-point sums (a take exactly at the edge of the tokens may go either way).
 */
function takeSecondAtOnce(bucket: TokenBucket, steps: number, units: number, startMs: number, offsets: Int32Array, ratePerSecond: number, burst: number): number {
  const lastMs = bucket.lastMs;
  // Out-of-order instants are the library's business (tokensAt): only a second after the last take is taken at once.
  if (!(startMs > lastMs) && !Number.isNaN(lastMs)) return -1;
  const firstTokens = Number.isNaN(lastMs) ? burst : Math.min(burst, bucket.tokens + ((startMs - lastMs) * ratePerSecond) / 1000);
  const lastOffsetMs = offsets[steps - 1]!;
  if (ratePerSecond * Math.ceil(1000 / steps) <= units * 1000 * MARGIN && 2 * units <= burst) {
    const reached = firstTokens + (ratePerSecond * lastOffsetMs) / 1000;
    const admitted = Math.min(steps, Math.floor(reached / units));
    bucket.tokens = reached - admitted * units;
    bucket.lastMs = startMs + lastOffsetMs;
    return steps - admitted;
  }
  if (firstTokens >= burst && units <= burst && ratePerSecond * Math.floor(1000 / steps) * MARGIN > units * 1000) {
    bucket.tokens = burst - units;
    bucket.lastMs = startMs + lastOffsetMs;
    return 0;
  }
  return -1;
}

/** Replays one (tenant, allowance)'s seconds, in time order, through a fresh limiter into `tally`. */
export function replaySeries(series: DemandSeries, limit: ReplayLimit, tally: RefusalTally): void {
  const { seconds, units, messages } = series;
  // A fresh limiter of the library for the (tenant, allowance): a bucket starts full, as the Governor's do.
  const bucket = limit.kind === 'TOKEN_BUCKET' ? new TokenBucket() : null;
  const window = limit.kind === 'FIXED_WINDOW' ? new FixedWindow() : null;
  const { ratePerSecond, burst } = limit;
  let minute = Number.NaN;
  let minuteRefused = 0;
  for (let i = 0; i < seconds.length; i++) {
    const second = seconds[i]!;
    const secondUnits = units[i]!;
    const secondMessages = messages[i]!;
    if (secondUnits <= 0 && secondMessages <= 0) continue;
    const steps = Math.min(MAX_STEPS_PER_SECOND, Math.max(1, Math.round(secondMessages)));
    const unitsPerStep = secondUnits / steps;
    let refusedSteps = 0;
    if (bucket !== null) {
      const startMs = second * 1000;
      const offsets = STEP_OFFSETS_MS[steps]!;
      refusedSteps = takeSecondAtOnce(bucket, steps, unitsPerStep, startMs, offsets, ratePerSecond, burst);
      if (refusedSteps < 0) {
        refusedSteps = 0;
        for (let step = 0; step < steps; step++) if (!bucket.take(unitsPerStep, startMs + offsets[step]!, ratePerSecond, burst)) refusedSteps++;
      }
    } else {
      for (let step = 0; step < steps; step++) if (!window!.takeExact(unitsPerStep, second, ratePerSecond)) refusedSteps++;
    }
    if (refusedSteps === 0) continue;
    const refusedUnits = unitsPerStep * refusedSteps;
    tally.refusedUnits += refusedUnits;
    tally.refusedMessages += (secondMessages / steps) * refusedSteps;
    tally.limitedSeconds++;
    const secondMinute = second - (second % 60);
    if (secondMinute !== minute) {
      if (minuteRefused > 0) tally.addMinute(minute, minuteRefused);
      minute = secondMinute;
      minuteRefused = 0;
    }
    minuteRefused += refusedUnits;
  }
  if (minuteRefused > 0) tally.addMinute(minute, minuteRefused);
}
