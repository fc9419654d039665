// The cascade and the fail-safe rule: tenant override -> tier -> platform default -> shipped default.
// A level whose value is missing, zero, negative, NaN, infinite, fractional, a string or above LIMIT_MAX is
// skipped; the shipped default always resolves, so nothing ever resolves to "unlimited".
import { DIMENSION_CATALOG, isLimitInteger, LIMIT_MAX } from './dimensions.ts';
import { DIMENSIONS } from './types.ts';
import type { Dimension, EffectiveLimit, LimitLevels, LimitSourceLevel, LimitValue, TenantGovernanceRecord } from './types.ts';

export interface CascadeLevel<Source extends string> {
  source: Source;
  value: unknown;
}

export interface Resolved<Value, Source extends string> {
  value: Value;
  source: Source;
}

/**
 * The first level, in order, whose raw value `accept` turns into a value. Shared with the control plane for
 * the AI model (tenant assignment -> tier default model) and branding (tenant -> branding.default -> shipped):
 * put an always-accepted last level in to guarantee an answer. Undefined only when no level is accepted.
 */
export function resolveCascade<Value, Source extends string>(
  levels: readonly CascadeLevel<Source>[],
  accept: (raw: unknown) => Value | undefined,
): Resolved<Value, Source> | undefined {
  for (const level of levels) {
    const value = accept(level.value);
    if (value !== undefined) return { value, source: level.source };
  }
  return undefined;
}

function field(raw: unknown, name: keyof LimitValue): unknown {
  return typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>)[name] : undefined;
}

/**
 * Reads one level's raw value for a dimension. A token bucket level counts when its rate is valid. Its burst,
 * when missing or invalid, is derived from that same level's rate at the shipped burst/rate ratio (capped at
 * LIMIT_MAX) rather than taken from a lower level: whoever set the rate set this level's whole limit, and a
 * burst borrowed from below could be smaller than the rate itself (an override of 50,000/s under a tier burst
 * of 2,000 would shed any batch above 2,000 readings), which nobody setting 50,000/s would expect.
 */
export function acceptLimit(dimension: Dimension, raw: unknown): LimitValue | undefined {
  const spec = DIMENSION_CATALOG[dimension];
  if (spec.kind === 'COUNT_CEILING') {
    const ceiling = field(raw, 'ceiling');
    return isLimitInteger(ceiling) ? { ceiling } : undefined;
  }
  const ratePerSecond = field(raw, 'ratePerSecond');
  if (!isLimitInteger(ratePerSecond)) return undefined;
  if (spec.kind === 'FIXED_WINDOW') return { ratePerSecond };
  const burst = field(raw, 'burst');
  if (isLimitInteger(burst)) return { ratePerSecond, burst };
  const shippedRatio = spec.shippedDefault.burst! / spec.shippedDefault.ratePerSecond!;
  return { ratePerSecond, burst: Math.min(LIMIT_MAX, Math.ceil(ratePerSecond * shippedRatio)) };
}

export function resolveEffectiveLimit(dimension: Dimension, levels: LimitLevels): Resolved<LimitValue, LimitSourceLevel> {
  const resolved = resolveCascade<LimitValue, LimitSourceLevel>(
    [
      { source: 'TENANT_OVERRIDE', value: levels.override },
      { source: 'TIER', value: levels.tier },
      { source: 'PLATFORM_DEFAULT', value: levels.platformDefault },
    ],
    (raw) => acceptLimit(dimension, raw),
  );
  return resolved ?? { value: { ...DIMENSION_CATALOG[dimension].shippedDefault }, source: 'SHIPPED_DEFAULT' };
}

/**
 * A level's shadow limit: a limit set with mode SHADOW rides in the level's stored value as `shadow` (the
 * cascade reads only ratePerSecond, burst and ceiling, so it never enforces it). Undefined when the level
 * carries none or an unusable one.
 */
export function shadowOf(dimension: Dimension, raw: unknown): LimitValue | undefined {
  const shadow = typeof raw === 'object' && raw !== null ? (raw as { shadow?: unknown }).shadow : undefined;
  return shadow === undefined ? undefined : acceptLimit(dimension, shadow);
}

/**
 * The shadow limit a tenant is watched at: the cascade run again with each level's shadow in place of its
 * value, when the level that wins then is one with a shadow. So a tier's shadow watches the tenants the tier
 * limit governs, and not a tenant whose own override wins; an override's shadow watches its tenant; a platform
 * default's shadow watches the tenants neither an override nor their tier sets. Rate dimensions only (token
 * buckets and fixed windows): a count ceiling is not decided per request.
 */
export function resolveShadowLimit(dimension: Dimension, levels: LimitLevels): Resolved<LimitValue, LimitSourceLevel> | undefined {
  if (DIMENSION_CATALOG[dimension].kind === 'COUNT_CEILING') return undefined;
  const override = shadowOf(dimension, levels.override);
  const tier = shadowOf(dimension, levels.tier);
  const platform = shadowOf(dimension, levels.platformDefault);
  if (override === undefined && tier === undefined && platform === undefined) return undefined;
  const resolved = resolveCascade<LimitValue, LimitSourceLevel>(
    [
      { source: 'TENANT_OVERRIDE', value: override ?? levels.override },
      { source: 'TIER', value: tier ?? levels.tier },
      { source: 'PLATFORM_DEFAULT', value: platform ?? levels.platformDefault },
    ],
    (raw) => acceptLimit(dimension, raw),
  );
  if (resolved === undefined) return undefined;
  const shadows: Partial<Record<LimitSourceLevel, LimitValue | undefined>> = { TENANT_OVERRIDE: override, TIER: tier, PLATFORM_DEFAULT: platform };
  return shadows[resolved.source] !== undefined ? resolved : undefined;
}

export type LevelsByDimension = Partial<Record<Dimension, LimitLevels>>;

/**
 * Effective limits for every dimension, for a tenant record or bare levels. `platformDefaults` fills the
 * platform level where the levels do not carry it (the LimitSource hands platform defaults over separately).
 */
export function resolveEffectiveLimits(
  input: TenantGovernanceRecord | LevelsByDimension,
  platformDefaults: Partial<Record<Dimension, unknown>> = {},
): EffectiveLimit[] {
  const levels: LevelsByDimension = isRecord(input) ? input.levels : input;
  return DIMENSIONS.map((dimension) => {
    const own = levels[dimension] ?? {};
    const withPlatform = { ...own, platformDefault: own.platformDefault ?? platformDefaults[dimension] };
    const { value, source } = resolveEffectiveLimit(dimension, withPlatform);
    const shadow = resolveShadowLimit(dimension, withPlatform);
    return shadow ? { dimension, value, source, shadow } : { dimension, value, source };
  });
}

function isRecord(input: TenantGovernanceRecord | LevelsByDimension): input is TenantGovernanceRecord {
  return typeof (input as TenantGovernanceRecord).tenantId === 'string' && 'levels' in input;
}
