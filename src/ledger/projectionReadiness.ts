// /readyz for the projection workers. A projection is unready when the oldest event it still has to apply
// is older than the bound. Events of types it does not apply never count, so a read model that is fresh
// stays ready however much other traffic flows past; events held back behind an older open transaction
// (PostgreSQL) do count, with their age, because the read model is behind them. A paced projection's pace is
// not counted against the bound: it waits that long on purpose, to write several seconds at once. A projection
// whose readers read what it has not applied from the ledger may declare a larger bound of its own
// (Projection.readyLagSeconds: admission-demand, a minute), so /readyz tells it stuck, not seconds behind.
import type { ProjectionLag } from './projectionRunner.ts';

export type LagProbe = () => Promise<readonly ProjectionLag[]>;

/**
 * The most of a projection's pace readiness forgives, whatever pace it declares: a projection paced slower
 * than this is counted behind for the rest, so no pace can hide a stalled read model from /readyz. The paced
 * projections: admission-trends at 2 s (projections/admissionTrends.ts), ready up to
 * GOVERNANCE_READY_MAX_LAG_SECONDS + 2 s behind; admission-demand at 15 s (projections/admissionDemand.ts:
 * its readers read what it has not applied from the ledger), paced past this and so given a bound of its own
 * (Projection.readyLagSeconds, 60 s): ready up to 60 + 5 s behind.
 */
export const MAX_FORGIVEN_PACE_SECONDS = 5;

export function projectionReadiness(probe: LagProbe, maxLagSeconds: number, now: () => number = Date.now): () => Promise<string | null> {
  // Each projection's lag at the previous check that found it behind: a projection behind at two checks in a
  // row is said to be catching up (its lag fell: it applies more than a second of the ledger a second) or not
  // (its lag held or grew: stuck, or slower than the traffic), so a restart's catch-up and a stuck projection
  // read apart on /readyz.
  const behindAt = new Map<string, { secondsBehind: number; atMs: number }>();
  return async () => {
    const reasons: string[] = [];
    const atMs = now();
    for (const lag of await probe()) {
      // A paced projection (Projection.livePaceMs) is behind by its pace on purpose: only what lies beyond counts,
      // and at most MAX_FORGIVEN_PACE_SECONDS of it is forgiven.
      // A projection with a bound of its own (Projection.readyLagSeconds: its readers complete it from the
      // ledger) is held to the larger of the two.
      const forgivenSeconds = Math.min(lag.paceSeconds ?? 0, MAX_FORGIVEN_PACE_SECONDS);
      const boundSeconds = Math.max(maxLagSeconds, lag.readyLagSeconds ?? 0);
      if (!lag.pending || lag.secondsBehind - forgivenSeconds <= boundSeconds) {
        behindAt.delete(lag.projection);
        continue;
      }
      const before = behindAt.get(lag.projection);
      behindAt.set(lag.projection, { secondsBehind: lag.secondsBehind, atMs });
      reasons.push(`${lag.projection} ${Math.round(lag.secondsBehind)}s${before === undefined ? '' : catchUp(before, lag.secondsBehind, atMs)}`);
    }
    return reasons.length === 0 ? null : `projections behind: ${reasons.join(', ')}`;
  };
}

/** How fast the lag fell since `before`: the ledger's seconds applied per second, and the time left at that pace. */
function catchUp(before: { secondsBehind: number; atMs: number }, secondsBehind: number, atMs: number): string {
  const elapsedSeconds = (atMs - before.atMs) / 1000;
  if (elapsedSeconds <= 0) return '';
  const timesRealTime = (elapsedSeconds + before.secondsBehind - secondsBehind) / elapsedSeconds;
  if (timesRealTime <= 1) return ` (not catching up: ${Math.max(0, timesRealTime).toFixed(1)}x real time)`;
  return ` (catching up at ${timesRealTime.toFixed(1)}x real time, about ${Math.ceil(secondsBehind / (timesRealTime - 1))}s left)`;
}
