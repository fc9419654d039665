// The cascade laid out for people: for each dimension, what every level holds (override, tier, platform
// default, shipped default), which level wins and why, in the words the console shows ("no override → tier
// value not set → platform default"). The winner is the governance library's own answer
// (resolveEffectiveLimit); this file only reads each level the way the cascade does, so the explanation can
// never disagree with the limit in force.
import type { Queryable } from '../db/db.ts';
import { acceptLimit, DIMENSION_CATALOG, DIMENSIONS, resolveEffectiveLimit } from '../governance/index.ts';
import type { Dimension, LimitSourceLevel, LimitValue } from '../governance/index.ts';
import { loadTenantGovernance } from './effectiveLimits.ts';
import { enforcedPart } from './shadowLimits.ts';
import type { LevelValue } from '../ledger/index.ts';

export interface CascadeLevelView {
  source: LimitSourceLevel;
  /** What this level holds, as the cascade reads it; null when it holds nothing usable. */
  value: LimitValue | null;
  /** Something is stored at this level but the cascade cannot use it (the fail-safe rule skips it). */
  unusable: boolean;
}

export interface CascadeView {
  dimension: Dimension;
  levels: CascadeLevelView[];
  winner: LimitSourceLevel;
  value: LimitValue;
  /** Why the winner won, e.g. "no override → tier value not set → platform default". */
  reason: string;
}

const LEVEL_WORDS: Record<LimitSourceLevel, { name: string; missing: string }> = {
  TENANT_OVERRIDE: { name: 'tenant override', missing: 'no override' },
  TIER: { name: 'tier', missing: 'tier value not set' },
  PLATFORM_DEFAULT: { name: 'platform default', missing: 'platform default not set' },
  SHIPPED_DEFAULT: { name: 'shipped default', missing: 'shipped default' },
};

/** Null when the tenant is not registered. */
export async function explainCascade(q: Queryable, tenantId: string, at: Date = new Date()): Promise<CascadeView[] | null> {
  const { tenants, platformDefaults } = await loadTenantGovernance(q, [tenantId], at);
  const record = tenants.get(tenantId);
  if (!record) return null;
  return DIMENSIONS.map((dimension) => {
    const own = record.levels[dimension] ?? {};
    const raw: Array<[LimitSourceLevel, unknown]> = [
      ['TENANT_OVERRIDE', own.override],
      ['TIER', record.tierId === null ? undefined : own.tier],
      ['PLATFORM_DEFAULT', platformDefaults[dimension]],
    ];
    const levels: CascadeLevelView[] = raw.map(([source, value]) => {
      const accepted = acceptLimit(dimension, value) ?? null;
      // A level holding only a shadow limit (mode SHADOW, shadowLimits.ts) enforces nothing: not set, not unusable.
      const shadowOnly = typeof value === 'object' && value !== null && 'shadow' in value && enforcedPart(value as LevelValue) === null;
      return { source, value: accepted, unusable: accepted === null && value !== undefined && value !== null && !shadowOnly };
    });
    levels.push({ source: 'SHIPPED_DEFAULT', value: { ...DIMENSION_CATALOG[dimension].shippedDefault }, unusable: false });
    const { value, source: winner } = resolveEffectiveLimit(dimension, {
      override: own.override,
      tier: record.tierId === null ? undefined : own.tier,
      platformDefault: platformDefaults[dimension],
    });
    const passed = levels
      .slice(0, levels.findIndex((level) => level.source === winner))
      .map((level) => (level.unusable ? `${LEVEL_WORDS[level.source].name} unusable` : level.source === 'TIER' && record.tierId === null ? 'no tier' : LEVEL_WORDS[level.source].missing));
    return { dimension, levels, winner, value, reason: [...passed, LEVEL_WORDS[winner].name].join(' → ') };
  });
}
