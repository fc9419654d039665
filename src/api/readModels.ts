// Where the API's types need another shape than the part that owns the read model gives, the adapter is here:
// stored limits as the cascade accepts them, each effective limit with its tenant's tier, a limit change found
// by its position. Everything the API reads as it is stored, it imports from its owner (src/control-plane,
// src/command-backlog) under the owner's name.
import type { Queryable } from '../db/index.ts';
import { acceptLimit, acceptQuota, DIMENSIONS, shadowOf } from '../governance/index.ts';
import type { Dimension, EffectiveLimit, LimitValue } from '../governance/index.ts';
import type { EventStore } from '../ledger/index.ts';
import { effectiveLimitsAt, limitHistory, listTiers, loadEffectiveLimits, loadOverrides } from '../control-plane/index.ts';
import type { LedgerEventRef, LimitChange, NotRegisteredAt, TenantEffectiveLimits } from '../control-plane/index.ts';

export interface TierRecord {
  tierId: string;
  name: string;
  limits: Array<{ dimension: Dimension; value: LimitValue }>;
  /** The shadow limits set beside them (mode SHADOW), by dimension. */
  shadowLimits: Array<{ dimension: Dimension; value: LimitValue }>;
}

export interface OverrideRecord {
  dimension: Dimension;
  value: LimitValue;
  expiresAt: Date | null;
}

/** An effective limit with the tier the tenant is on (null on platform defaults). */
export interface TenantLimit extends EffectiveLimit {
  tierId: string | null;
  /** Whose limit it is (EffectiveLimit.pending lists the changes requested for it). */
  tenantId?: string;
  /** effectiveLimitsAt only: the ledger events that decide it. */
  sourceEvents?: LedgerEventRef[];
}

function withTier({ tenantId, tierId, limits }: TenantEffectiveLimits): TenantLimit[] {
  return limits.map((limit) => ({ ...limit, tierId, tenantId }));
}

/** Stored values are shown as the cascade would use them: a malformed one (never accepted as input) is left out. */
function tierRecord(tier: Awaited<ReturnType<typeof listTiers>>[number]): TierRecord {
  const limits = DIMENSIONS.flatMap((dimension) => {
    const value = acceptLimit(dimension, tier.limits[dimension]);
    const quota = acceptQuota(dimension, tier.limits[dimension]);
    if (!value && !quota) return [];
    return [{ dimension, value: quota ? { ...value, quota } : value! }];
  });
  const shadowLimits = DIMENSIONS.flatMap((dimension) => {
    const value = shadowOf(dimension, tier.limits[dimension]);
    return value ? [{ dimension, value }] : [];
  });
  return { tierId: tier.tierId, name: tier.name, limits, shadowLimits };
}

export async function listTierRecords(q: Queryable): Promise<TierRecord[]> {
  return (await listTiers(q)).map(tierRecord);
}

export async function loadTierRecords(q: Queryable, tierIds: readonly string[]): Promise<Map<string, TierRecord>> {
  return new Map((await listTiers(q, tierIds)).map((tier) => [tier.tierId, tierRecord(tier)]));
}

export async function loadOverrideRecords(q: Queryable, tenantIds: readonly string[]): Promise<Map<string, OverrideRecord[]>> {
  const byTenant = await loadOverrides(q, tenantIds);
  return new Map(
    [...byTenant].map(([tenantId, overrides]) => [
      tenantId,
      overrides.flatMap(({ dimension, value, expiresAt }) => {
        // An override may set a rate, a quota, or both: each is read only when valid (the cascade's own checks).
        const accepted = acceptLimit(dimension, value);
        const quota = acceptQuota(dimension, value);
        if (!accepted && !quota) return [];
        return [{ dimension, value: quota ? { ...accepted, quota } : accepted!, expiresAt }];
      }),
    ]),
  );
}

export async function loadTenantLimits(q: Queryable, tenantIds: readonly string[]): Promise<Map<string, TenantLimit[]>> {
  const byTenant = await loadEffectiveLimits(q, tenantIds);
  return new Map([...byTenant].map(([tenantId, limits]) => [tenantId, withTier(limits)]));
}

/** NotRegisteredAt: the tenant was not registered at that instant (it was later, or never). */
export async function tenantLimitsAt(sources: { store: EventStore }, tenantId: string, at: Date): Promise<TenantLimit[] | NotRegisteredAt> {
  const limits = await effectiveLimitsAt(sources.store, tenantId, at);
  if ('notRegistered' in limits) return limits;
  return withTier(limits).map((limit) => ({ ...limit, sourceEvents: limits.sourceEvents[limit.dimension] ?? [] }));
}

/**
 * One change the history just recorded, found by its position among the newest changes to the same tenant,
 * tier and dimension. A subscriber asks right after the commit, so it is on the first page but for a burst.
 */
export async function limitChangeAt(
  q: Queryable,
  notice: { position: string; tenantId: string | null; tierId: string | null; dimension: Dimension | null },
): Promise<LimitChange | null> {
  let after: string | undefined;
  for (;;) {
    const page = await limitHistory(q, {
      tenantId: notice.tenantId,
      tierId: notice.tierId,
      dimension: notice.dimension,
      first: 50,
      after,
    });
    const change = page.nodes.find((node) => node.position === notice.position);
    if (change) return change;
    if (!page.hasNextPage || page.endCursor === null) return null;
    after = page.endCursor;
  }
}
