// The effective limits of many tenants: one query (loadTenantGovernance), then the governance library's
// cascade, which also says which level won. Nothing here decides a limit on its own.
import type { Queryable } from '../db/db.ts';
import { resolveEffectiveLimits } from '../governance/index.ts';
import type { Dimension, EffectiveLimit, LimitSourceLevel, LimitValue } from '../governance/index.ts';
import { loadTenantGovernance } from './loadTenantGovernance.ts';

export interface TenantEffectiveLimits {
  tenantId: string;
  tierId: string | null;
  limits: EffectiveLimit[];
}

/** Tenants that are not registered are absent from the map. */
export async function loadEffectiveLimits(
  q: Queryable,
  tenantIds: readonly string[],
  at: Date = new Date(),
): Promise<Map<string, TenantEffectiveLimits>> {
  const { tenants, platformDefaults } = await loadTenantGovernance(q, tenantIds, at);
  const result = new Map<string, TenantEffectiveLimits>();
  for (const [tenantId, record] of tenants) {
    result.set(tenantId, { tenantId, tierId: record.tierId, limits: resolveEffectiveLimits(record, platformDefaults) });
  }
  return result;
}

/** One tenant's limit on one dimension; null when the tenant is not registered. */
export async function resolveTenantLimit(
  q: Queryable,
  tenantId: string,
  dimension: Dimension,
  at: Date = new Date(),
): Promise<{ value: LimitValue; source: LimitSourceLevel } | null> {
  const found = (await loadEffectiveLimits(q, [tenantId], at)).get(tenantId);
  const limit = found?.limits.find((each) => each.dimension === dimension);
  return limit ? { value: limit.value, source: limit.source } : null;
}
