// Replays recorded demand through a limiter: the governance library's own TokenBucket (rate dimensions) or
// FixedWindow (API_REQUESTS, EXACT_REJECT), with the numbers of the limit asked about, so a preview decides as
// the Governor would. Nothing here reads or writes anything but its arguments.
//
// What the ledger keeps of a second is its totals (units and messages offered), not each request: a second's
// units are replayed as its messages, each of an equal share of the units, evenly spaced within the second
// (at most MAX_STEPS_PER_SECOND of them; more messages are replayed in that many equal steps). A span of
// several seconds is spread evenly over them. Traffic sent in a burst at the start of a second is refused a
// little more by a real limiter than by the replay.
import { FixedWindow, TokenBucket } from '../governance/index.ts';
import type { DemandSpan } from './readDemand.ts';

/** Steps a second's demand is replayed in, at most (one per message below this). */
export const MAX_STEPS_PER_SECOND = 100;

export interface ReplayLimit {
  kind: 'TOKEN_BUCKET' | 'FIXED_WINDOW';
  ratePerSecond: number;
  /** The bucket size; a fixed window's limit per window is `ratePerSecond`. */
  burst: number;
}

/** What a limiter would have refused of one tenant's demand. */
export class RefusalTally {
  refusedUnits = 0;
  refusedMessages = 0;
  /** Seconds in which something was refused, summed over the tenant's allowances. */
  limitedSeconds = 0;
  /** Refused units per minute (unix second of the minute's start). */
  readonly byMinute = new Map<number, number>();

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

/** One limiter of the library, fresh (a bucket starts full, as the Governor's does), for one (tenant, allowance). */
function limiterFor(limit: ReplayLimit): (units: number, atMs: number, second: number) => boolean {
  if (limit.kind === 'FIXED_WINDOW') {
    const window = new FixedWindow();
    return (units, _atMs, second) => window.takeExact(units, second, limit.ratePerSecond);
  }
  const bucket = new TokenBucket();
  return (units, atMs) => bucket.take(units, atMs, limit.ratePerSecond, limit.burst);
}

/** Replays the spans of one (tenant, allowance), in time order, into `tally`; `fromSecond`/`toSecond` bound the range. */
export function replaySpans(spans: readonly DemandSpan[], limit: ReplayLimit, tally: RefusalTally, fromSecond: number, toSecond: number): void {
  const take = limiterFor(limit);
  for (const span of spans) {
    const seconds = Math.max(1, Math.floor(span.seconds));
    const units = span.units / seconds;
    const messages = span.messages / seconds;
    for (let second = span.fromSecond; second < span.fromSecond + seconds; second++) {
      if (second < fromSecond || second >= toSecond || (units <= 0 && messages <= 0)) continue;
      const steps = Math.min(MAX_STEPS_PER_SECOND, Math.max(1, Math.round(messages)));
      const unitsPerStep = units / steps;
      const messagesPerStep = messages / steps;
      let refusedUnits = 0;
      let refusedMessages = 0;
      for (let step = 0; step < steps; step++) {
        if (!take(unitsPerStep, second * 1000 + Math.floor((step * 1000) / steps), second)) {
          refusedUnits += unitsPerStep;
          refusedMessages += messagesPerStep;
        }
      }
      if (refusedMessages === 0 && refusedUnits === 0) continue;
      tally.refusedUnits += refusedUnits;
      tally.refusedMessages += refusedMessages;
      tally.limitedSeconds++;
      const minute = second - (second % 60);
      tally.byMinute.set(minute, (tally.byMinute.get(minute) ?? 0) + refusedUnits);
    }
  }
}
