// One query for the governance records of any number of tenants: tier, tier limits, the overrides in force
// at `at`, the API over-limit policy, and the platform defaults. Expired overrides are left out here, at
// read time, so an override stops applying at its expiresAt whether or not anything was written since.
import { prepared } from '../db/preparedStatements.ts';
import type { Queryable } from '../db/db.ts';
import type { Dimension, LimitLevels, OverLimitPolicy, TenantGovernanceRecord } from '../governance/index.ts';

export interface TenantGovernance {
  tenants: Map<string, TenantGovernanceRecord>;
  platformDefaults: Partial<Record<Dimension, unknown>>;
}

interface Row {
  tenant_id: string;
  tier_id: string | null;
  api_over_limit_policy: OverLimitPolicy | null;
  tier_limits: Record<string, unknown> | null;
  overrides: Record<string, unknown> | null;
  platform_defaults: Record<string, unknown> | null;
}

const SQL = prepared(`
SELECT t.tenant_id, t.tier_id, t.api_over_limit_policy,
  (SELECT jsonb_object_agg(l.dimension, l.value) FROM gl_tier_limits l WHERE l.tier_id = t.tier_id) AS tier_limits,
  (SELECT jsonb_object_agg(o.dimension, o.value) FROM gl_tenant_overrides o
    WHERE o.tenant_id = t.tenant_id AND (o.expires_at IS NULL OR o.expires_at > $2)) AS overrides,
  (SELECT jsonb_object_agg(p.dimension, p.value) FROM gl_platform_defaults p) AS platform_defaults
FROM gl_tenants t
WHERE t.tenant_id = ANY($1::text[])`);

export async function loadTenantGovernance(q: Queryable, tenantIds: readonly string[], at: Date): Promise<TenantGovernance> {
  const tenants = new Map<string, TenantGovernanceRecord>();
  if (tenantIds.length === 0) return { tenants, platformDefaults: {} };
  const { rows } = await q.query<Row>(SQL, [[...new Set(tenantIds)], at]);
  let platformDefaults: Partial<Record<Dimension, unknown>> = {};
  for (const row of rows) {
    platformDefaults = (row.platform_defaults ?? {}) as Partial<Record<Dimension, unknown>>;
    const levels: Partial<Record<Dimension, LimitLevels>> = {};
    for (const [dimension, tier] of Object.entries(row.tier_limits ?? {})) levels[dimension as Dimension] = { tier };
    for (const [dimension, override] of Object.entries(row.overrides ?? {})) {
      levels[dimension as Dimension] = { ...levels[dimension as Dimension], override };
    }
    tenants.set(row.tenant_id, {
      tenantId: row.tenant_id,
      tierId: row.tier_id,
      levels,
      ...(row.api_over_limit_policy ? { apiOverLimitPolicy: row.api_over_limit_policy } : {}),
    });
  }
  return { tenants, platformDefaults };
}
