// /readyz for the projection workers. A projection is unready when it is further behind than the bound, by
// the age of its oldest unprojected event or by how long it has been behind without a pause. The second
// measure matters because events held back by a long transaction elsewhere on the server report no age:
// the projection is behind (eventsBehind >= 1) but secondsBehind stays 0 until the events become readable.
import type { ProjectionLag } from './projectionRunner.ts';

export type LagProbe = () => Promise<readonly ProjectionLag[]>;

export function projectionReadiness(
  probe: LagProbe,
  maxLagSeconds: number,
  now: () => number = Date.now,
): () => Promise<string | null> {
  const behindSinceMs = new Map<string, number>();
  return async () => {
    const atMs = now();
    const reasons: string[] = [];
    for (const lag of await probe()) {
      if (lag.eventsBehind === 0) {
        behindSinceMs.delete(lag.projection);
        continue;
      }
      const since = behindSinceMs.get(lag.projection) ?? atMs;
      behindSinceMs.set(lag.projection, since);
      const seconds = Math.max(lag.secondsBehind, (atMs - since) / 1000);
      if (seconds > maxLagSeconds) reasons.push(`${lag.projection} ${Math.round(seconds)}s`);
    }
    return reasons.length === 0 ? null : `projections behind: ${reasons.join(', ')}`;
  };
}
