// /readyz for the projection workers. A projection is unready when the oldest event it still has to apply
// is older than the bound. Events of types it does not apply never count, so a read model that is fresh
// stays ready however much other traffic flows past; events held back behind an older open transaction
// (PostgreSQL) do count, with their age, because the read model is behind them.
import type { ProjectionLag } from './projectionRunner.ts';

export type LagProbe = () => Promise<readonly ProjectionLag[]>;

export function projectionReadiness(probe: LagProbe, maxLagSeconds: number): () => Promise<string | null> {
  return async () => {
    const reasons: string[] = [];
    for (const lag of await probe()) {
      if (lag.pending && lag.secondsBehind > maxLagSeconds) reasons.push(`${lag.projection} ${Math.round(lag.secondsBehind)}s`);
    }
    return reasons.length === 0 ? null : `projections behind: ${reasons.join(', ')}`;
  };
}
