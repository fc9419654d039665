// Tenants by id, one query; unregistered ids are absent from the map.
import type { Queryable } from '../db/db.ts';
import type { OverLimitPolicy } from '../governance/index.ts';
import type { Branding } from '../ledger/catalog/controlPlane.ts';

export interface TenantRecord {
  tenantId: string;
  tierId: string | null;
  /** The tenant's own assignment; resolveTenantModels applies the cascade. */
  model: string | null;
  /** The tenant's own branding; resolveTenantBrandings applies the cascade. */
  branding: Branding | null;
  apiOverLimitPolicy: OverLimitPolicy | null;
  registeredAt: Date;
}

export interface TenantRow {
  tenant_id: string;
  tier_id: string | null;
  model: string | null;
  branding: Branding | null;
  api_over_limit_policy: OverLimitPolicy | null;
  registered_at: Date;
}

export const TENANT_COLUMNS = 'tenant_id, tier_id, model, branding, api_over_limit_policy, registered_at';

export function toTenantRecord(row: TenantRow): TenantRecord {
  return {
    tenantId: row.tenant_id,
    tierId: row.tier_id,
    model: row.model,
    branding: row.branding,
    apiOverLimitPolicy: row.api_over_limit_policy,
    registeredAt: new Date(row.registered_at),
  };
}

export async function loadTenants(q: Queryable, tenantIds: readonly string[]): Promise<Map<string, TenantRecord>> {
  const result = new Map<string, TenantRecord>();
  if (tenantIds.length === 0) return result;
  const { rows } = await q.query<TenantRow>(`SELECT ${TENANT_COLUMNS} FROM gl_tenants WHERE tenant_id = ANY($1::text[])`, [[...new Set(tenantIds)]]);
  for (const row of rows) result.set(row.tenant_id, toTenantRecord(row));
  return result;
}
