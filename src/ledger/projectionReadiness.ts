// /readyz for the projection workers. A projection is unready when the oldest event it still has to apply
// is older than the bound. Events of types it does not apply never count, so a read model that is fresh
// stays ready however much other traffic flows past; events held back behind an older open transaction
// (PostgreSQL) do count, with their age, because the read model is behind them. A paced projection's pace is
// not counted against the bound: it waits that long on purpose, to write several seconds at once.
import type { ProjectionLag } from './projectionRunner.ts';

export type LagProbe = () => Promise<readonly ProjectionLag[]>;

export function projectionReadiness(probe: LagProbe, maxLagSeconds: number): () => Promise<string | null> {
  return async () => {
    const reasons: string[] = [];
    for (const lag of await probe()) {
      // A paced projection (Projection.livePaceMs) is behind by its pace on purpose: only what lies beyond counts.
      if (lag.pending && lag.secondsBehind - (lag.paceSeconds ?? 0) > maxLagSeconds) reasons.push(`${lag.projection} ${Math.round(lag.secondsBehind)}s`);
    }
    return reasons.length === 0 ? null : `projections behind: ${reasons.join(', ')}`;
  };
}
