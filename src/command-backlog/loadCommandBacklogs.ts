// The command backlog of many tenants for the API: the authoritative count from the guard rows and the
// ceiling the cascade gives each tenant now. Two queries however many tenants (the control plane's one
// query for the limits, one here for the counts).
import type { Queryable } from '../db/db.ts';
import type { LimitSourceLevel } from '../governance/index.ts';
import { loadEffectiveLimits } from '../control-plane/loadEffectiveLimits.ts';

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
