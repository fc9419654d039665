// The CeilingSource the service uses: the tenant's UNDELIVERED_COMMANDS ceiling from the control plane's
// read model, through the cascade (override -> tier -> platform default -> shipped default), read beside the
// enqueue's transaction (see CeilingSource). `many` reads several tenants in the one query loadEffectiveLimits
// makes anyway.
import type { Queryable } from '../db/db.ts';
import { loadEffectiveLimits, resolveTenantLimit } from '../control-plane/loadEffectiveLimits.ts';
import type { LimitSourceLevel, LimitValue } from '../governance/index.ts';
import type { CeilingSource, TenantCeiling } from './types.ts';

function ceilingOf(tenantId: string, limit: { value: LimitValue; source: LimitSourceLevel }): TenantCeiling {
  // The cascade never resolves to "unlimited": a ceiling is always there. Its absence is a fault, not a pass.
  if (limit.value.ceiling === undefined) throw new Error(`the cascade gave tenant ${tenantId} no UNDELIVERED_COMMANDS ceiling`);
  return { ceiling: limit.value.ceiling, source: limit.source };
}

const oneTenant = async (q: Queryable, tenantId: string): Promise<TenantCeiling | null> => {
  const limit = await resolveTenantLimit(q, tenantId, 'UNDELIVERED_COMMANDS');
  return limit ? ceilingOf(tenantId, limit) : null;
};

const manyTenants = async (q: Queryable, tenantIds: readonly string[]): Promise<Map<string, TenantCeiling | null>> => {
  const found = await loadEffectiveLimits(q, tenantIds);
  const ceilings = new Map<string, TenantCeiling | null>();
  for (const tenantId of tenantIds) {
    const limit = found.get(tenantId)?.limits.find((each) => each.dimension === 'UNDELIVERED_COMMANDS');
    ceilings.set(tenantId, limit ? ceilingOf(tenantId, limit) : null);
  }
  return ceilings;
};

export const controlPlaneCeilings: CeilingSource = Object.assign(oneTenant, { many: manyTenants });
