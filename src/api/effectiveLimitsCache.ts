// Effective limits are read far more often than they change: every enforcement point and dashboard polls
// them. One cache per server answers repeated reads from memory. It is emptied whenever a control-plane
// projection commits (each of their read models feeds the cascade), and an entry lives at most maxAgeMs,
// which bounds how late an override's lapse shows: a lapse is a moment passing, and no event announces it.
import type { Queryable } from '../db/db.ts';
import { loadTenantLimits, type TenantLimit } from './readModels.ts';
import type { ApiPubSub } from './pubsub.ts';

export interface EffectiveLimitsCache {
  /** Like readModels.loadTenantLimits: an unregistered tenant is absent from the map. */
  load(q: Queryable, tenantIds: readonly string[]): Promise<Map<string, TenantLimit[]>>;
  invalidate(): void;
}

export interface EffectiveLimitsCacheOptions {
  maxAgeMs?: number;
  /** Past this many tenants the cache starts over rather than grow without bound. */
  maxEntries?: number;
  now?: () => number;
}

export function createEffectiveLimitsCache({ maxAgeMs = 1_000, maxEntries = 10_000, now = Date.now }: EffectiveLimitsCacheOptions = {}): EffectiveLimitsCache {
  // Unknown tenants are cached too (as null): asking about a made-up tenant must not cost a query each time.
  const entries = new Map<string, { limits: TenantLimit[] | null; freshUntilMs: number }>();
  let generation = 0;
  return {
    async load(q, tenantIds) {
      const result = new Map<string, TenantLimit[]>();
      const missing: string[] = [];
      const askedAtMs = now();
      for (const tenantId of new Set(tenantIds)) {
        const entry = entries.get(tenantId);
        if (!entry || entry.freshUntilMs <= askedAtMs) missing.push(tenantId);
        else if (entry.limits) result.set(tenantId, entry.limits);
      }
      if (missing.length === 0) return result;
      const readInGeneration = generation;
      const loaded = await loadTenantLimits(q, missing);
      // A commit while we read may have changed what we read: answer with it, but keep it only if none did.
      const keep = readInGeneration === generation;
      if (keep && entries.size + missing.length > maxEntries) entries.clear();
      for (const tenantId of missing) {
        const limits = loaded.get(tenantId) ?? null;
        if (limits) result.set(tenantId, limits);
        if (keep) entries.set(tenantId, { limits, freshUntilMs: askedAtMs + maxAgeMs });
      }
      return result;
    },
    invalidate() {
      generation += 1;
      entries.clear();
    },
  };
}

/** Empties the cache on every control-plane commit the projections publish (see publishers.ts). */
export function invalidateOnCommits(cache: EffectiveLimitsCache, pubsub: ApiPubSub): void {
  void (async () => {
    for await (const _commit of pubsub.subscribe('controlPlaneCommitted')) cache.invalidate();
  })();
}
