// Effective limits of one tenant (or of the platform default) laid out by dimension index for the hot path.
import { resolveEffectiveLimits } from './cascade.ts';
import { DIMENSIONS } from './types.ts';
import type { LevelsByDimension } from './cascade.ts';
import { resolveQuota } from './quotaValue.ts';
import type { Dimension, LimitSourceLevel, OverLimitPolicy, QuotaValue, TenantGovernanceRecord } from './types.ts';

const limitsWithoutShadow: readonly number[] = DIMENSIONS.map(() => 0);

export class ResolvedLimits {
  /** Whether any dimension has a period quota: such a tenant never takes admit's fast path. */
  readonly hasQuota: boolean;

  constructor(
    /** Rate per second (fixed window: requests per window), by dimension index; 0 for count ceilings. */
    readonly ratePerSecond: readonly number[],
    readonly burst: readonly number[],
    readonly source: readonly LimitSourceLevel[],
    readonly apiOverLimitPolicy: OverLimitPolicy,
    /** The shadow limit's rate by dimension index (resolveShadowLimit); 0 where there is none. */
    readonly shadowRatePerSecond: readonly number[] = limitsWithoutShadow,
    readonly shadowBurst: readonly number[] = limitsWithoutShadow,
    /** The period quota in force by dimension index, or null where no level sets one. */
    readonly quota: readonly (QuotaValue | null)[] = DIMENSIONS.map(() => null),
  ) {
    this.hasQuota = quota.some((each) => each !== null);
  }

  static resolve(
    input: TenantGovernanceRecord | LevelsByDimension,
    platformDefaults: Partial<Record<Dimension, unknown>>,
    apiOverLimitPolicy: OverLimitPolicy = 'EXACT_REJECT',
  ): ResolvedLimits {
    const limits = resolveEffectiveLimits(input, platformDefaults);
    const shadows = limits.map((each) => each.shadow?.value);
    const levels: LevelsByDimension = 'levels' in input && typeof input.tenantId === 'string' ? (input as TenantGovernanceRecord).levels : (input as LevelsByDimension);
    return new ResolvedLimits(
      limits.map((each) => each.value.ratePerSecond ?? 0),
      limits.map((each) => each.value.burst ?? each.value.ratePerSecond ?? 0),
      limits.map((each) => each.source),
      apiOverLimitPolicy,
      shadows.map((shadow) => shadow?.ratePerSecond ?? 0),
      shadows.map((shadow) => shadow?.burst ?? 0),
      DIMENSIONS.map((dimension) => {
        const own = levels[dimension] ?? {};
        return resolveQuota(dimension, { ...own, platformDefault: own.platformDefault ?? platformDefaults[dimension] })?.value ?? null;
      }),
    );
  }
}

/**
 * What a tenant's limits are resolved from, shared by every tenant whose record says the same (limitCache.ts
 * interns records by content); never changed once made, but for the limits resolved from it.
 */
export interface Ceilings {
  readonly tierId: string | null;
  readonly levels: LevelsByDimension;
  readonly apiOverLimitPolicy: OverLimitPolicy;
  /** Resolved against the platform defaults of `limitsVersion` (LimitCache.platformVersion), or null. */
  limits: ResolvedLimits | null;
  limitsVersion: number;
}
