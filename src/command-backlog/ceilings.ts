// The backlog's ceilings: the tenant's UNDELIVERED_COMMANDS ceiling through the control plane's cascade, read
// for one tenant or many, and the backlog of many tenants beside its ceiling for the API and the metrics.
import type { Queryable } from '../db/db.ts';
import { loadEffectiveLimits, resolveTenantLimit } from '../control-plane/index.ts';
import type { LimitSourceLevel, LimitValue } from '../governance/index.ts';
import type { CeilingSource, TenantCeiling } from './types.ts';

// The CeilingSource the service uses: the tenant's UNDELIVERED_COMMANDS ceiling from the control plane's
// read model, through the cascade (override -> tier -> platform default -> shipped default), read beside the
// enqueue's transaction (see CeilingSource). `many` reads several tenants in the one query loadEffectiveLimits
// makes anyway.
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

/**
 * The ceilings of several tenants, in the caller's transaction: one read through `source.many` when the
 * source has it and there is more than one tenant, else one call per tenant, in the order given.
 */
export async function readCeilings(source: CeilingSource, q: Queryable, tenantIds: readonly string[]): Promise<Map<string, TenantCeiling | null>> {
  const ceilings = new Map<string, TenantCeiling | null>();
  if (tenantIds.length > 1 && source.many) {
    const found = await source.many(q, tenantIds);
    for (const tenantId of tenantIds) ceilings.set(tenantId, found.get(tenantId) ?? null);
    return ceilings;
  }
  for (const tenantId of tenantIds) ceilings.set(tenantId, await source(q, tenantId));
  return ceilings;
}

// The command backlog of many tenants for the API: the authoritative count from the guard rows and the
// ceiling the cascade gives each tenant now. Two queries however many tenants (the control plane's one
// query for the limits, one here for the counts).
export interface TenantCommandBacklog {
  tenantId: string;
  undelivered: number;
  ceiling: number;
  source: LimitSourceLevel;
}

/** Tenants that are not registered are absent from the map; a tenant that never enqueued has 0. */
export async function loadCommandBacklogs(q: Queryable, tenantIds: readonly string[]): Promise<Map<string, TenantCommandBacklog>> {
  const result = new Map<string, TenantCommandBacklog>();
  if (tenantIds.length === 0) return result;
  const [limits, counts] = await Promise.all([
    loadEffectiveLimits(q, tenantIds),
    q.query<{ tenant_id: string; undelivered: number }>(
      'SELECT tenant_id, undelivered FROM gl_command_backlog_guard WHERE tenant_id = ANY($1::text[])',
      [[...new Set(tenantIds)]],
    ),
  ]);
  const undelivered = new Map(counts.rows.map((row) => [row.tenant_id, row.undelivered]));
  for (const [tenantId, tenant] of limits) {
    const limit = tenant.limits.find((each) => each.dimension === 'UNDELIVERED_COMMANDS');
    if (limit?.value.ceiling === undefined) continue;
    result.set(tenantId, { tenantId, undelivered: undelivered.get(tenantId) ?? 0, ceiling: limit.value.ceiling, source: limit.source });
  }
  return result;
}
