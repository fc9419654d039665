// The overrides in force at `at` for many tenants, one query. An override whose expiresAt has passed is
// not in force and is not returned (the limit history shows its lapse).
import type { Queryable } from '../db/db.ts';
import type { Dimension } from '../governance/index.ts';

export interface TenantOverride {
  tenantId: string;
  dimension: Dimension;
  /** As set (raw); resolution through the cascade validates it. */
  value: unknown;
  expiresAt: Date | null;
  reason: string;
  actor: string;
  setAt: Date;
}

interface Row {
  tenant_id: string;
  dimension: Dimension;
  value: unknown;
  expires_at: Date | null;
  reason: string;
  actor: string;
  set_at: Date;
}

export async function loadOverrides(
  q: Queryable,
  tenantIds: readonly string[],
  at: Date = new Date(),
): Promise<Map<string, TenantOverride[]>> {
  const result = new Map<string, TenantOverride[]>(tenantIds.map((tenantId) => [tenantId, []]));
  if (tenantIds.length === 0) return result;
  const { rows } = await q.query<Row>(
    `SELECT tenant_id, dimension, value, expires_at, reason, actor, set_at FROM gl_tenant_overrides
     WHERE tenant_id = ANY($1::text[]) AND (expires_at IS NULL OR expires_at > $2)
     ORDER BY tenant_id, dimension`,
    [[...new Set(tenantIds)], at],
  );
  for (const row of rows) {
    result.get(row.tenant_id)?.push({
      tenantId: row.tenant_id,
      dimension: row.dimension,
      value: row.value,
      expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
      reason: row.reason,
      actor: row.actor,
      setAt: new Date(row.set_at),
    });
  }
  return result;
}
