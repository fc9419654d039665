// The effective limits as the control-plane read models give them: one query for the governance records of any
// number of tenants, the governance library's cascade over them, and the Governor's LimitSource built on both.
import { prepared } from '../db/preparedStatements.ts';
import type { Queryable } from '../db/db.ts';
import { resolveEffectiveLimits } from '../governance/index.ts';
import type { ControlPlaneEvent } from '../ledger/index.ts';
import { dueChangesSql, layDueChanges, loadDueChanges, stillApplying } from './change-requests/dueChanges.ts';
import type {
  Dimension,
  EffectiveLimit,
  LimitLevels,
  LimitSource,
  LimitSourceLevel,
  LimitValue,
  OverLimitPolicy,
  TenantGovernanceRecord,
} from '../governance/index.ts';

// One query for the governance records of any number of tenants: tier, tier limits, the overrides in force
// at `at`, the API over-limit policy, and the platform defaults. Expired overrides are left out here, at
// read time, so an override stops applying at its expiresAt whether or not anything was written since; a
// scheduled change whose instant has come is laid over them at read time too (change-requests/dueChanges.ts).
export interface TenantGovernance {
  tenants: Map<string, TenantGovernanceRecord>;
  platformDefaults: Partial<Record<Dimension, unknown>>;
}

export interface GovernanceRow {
  tenant_id: string;
  tier_id: string | null;
  api_over_limit_policy: OverLimitPolicy | null;
  tier_limits: Record<string, unknown> | null;
  overrides: Record<string, unknown> | null;
  platform_defaults: Record<string, unknown> | null;
}

const GOVERNANCE_SQL = prepared(`
SELECT t.tenant_id, t.tier_id, t.api_over_limit_policy,
  (SELECT jsonb_object_agg(l.dimension, l.value) FROM gl_tier_limits l WHERE l.tier_id = t.tier_id) AS tier_limits,
  (SELECT jsonb_object_agg(o.dimension, o.value) FROM gl_tenant_overrides o
    WHERE o.tenant_id = t.tenant_id AND (o.expires_at IS NULL OR o.expires_at > $2)) AS overrides,
  (SELECT jsonb_object_agg(p.dimension, p.value) FROM gl_platform_defaults p) AS platform_defaults,
  ${dueChangesSql('$2')} AS due_changes
FROM gl_tenants t
WHERE t.tenant_id = ANY($1::text[])`);

export async function loadTenantGovernance(q: Queryable, tenantIds: readonly string[], at: Date): Promise<TenantGovernance> {
  const tenants = new Map<string, TenantGovernanceRecord>();
  if (tenantIds.length === 0) return { tenants, platformDefaults: {} };
  const { rows } = await q.query<GovernanceRow & { due_changes: ControlPlaneEvent[] | null }>(GOVERNANCE_SQL, [[...new Set(tenantIds)], at]);
  let platformDefaults: Partial<Record<Dimension, unknown>> = {};
  for (const row of rows) {
    platformDefaults = (row.platform_defaults ?? {}) as Partial<Record<Dimension, unknown>>;
    tenants.set(row.tenant_id, recordOfRow(row));
  }
  layDueChanges(stillApplying(rows[0]?.due_changes ?? null, at), tenants.values(), platformDefaults);
  return { tenants, platformDefaults };
}

/** A tenant's governance record from a row of the governance query (also read in pages at start, limitChanges.ts). */
export function recordOfRow(row: GovernanceRow): TenantGovernanceRecord {
  const levels: Partial<Record<Dimension, LimitLevels>> = {};
  for (const [dimension, tier] of Object.entries(row.tier_limits ?? {})) levels[dimension as Dimension] = { tier };
  for (const [dimension, override] of Object.entries(row.overrides ?? {})) {
    levels[dimension as Dimension] = { ...levels[dimension as Dimension], override };
  }
  return {
    tenantId: row.tenant_id,
    tierId: row.tier_id,
    levels,
    ...(row.api_over_limit_policy ? { apiOverLimitPolicy: row.api_over_limit_policy } : {}),
  };
}

// The effective limits of many tenants: one query (loadTenantGovernance), then the governance library's
// cascade, which also says which level won. Nothing here decides a limit on its own.
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

// The operator-set platform default per dimension, raw as stored: the cascade decides whether a value is
// usable, so nothing here validates it.
export async function loadPlatformDefaults(q: Queryable, at: Date = new Date()): Promise<Partial<Record<Dimension, unknown>>> {
  const { rows } = await q.query<{ dimension: Dimension; value: unknown }>('SELECT dimension, value FROM gl_platform_defaults');
  const defaults = Object.fromEntries(rows.map((row) => [row.dimension, row.value])) as Partial<Record<Dimension, unknown>>;
  layDueChanges(await loadDueChanges(q, at), [], defaults);
  return defaults;
}

// The Governor's LimitSource, backed by the control-plane read models. loadTenants answers a whole batch in
// one query; a tenant absent from the answer is unknown; a database fault rejects (the Governor then
// treats the source as unreachable and keeps last-known values).
export function createReadModelLimitSource(db: Queryable, now: () => Date = () => new Date()): LimitSource {
  return {
    async loadTenants(tenantIds) {
      return (await loadTenantGovernance(db, tenantIds, now())).tenants;
    },
    loadPlatformDefaults: () => loadPlatformDefaults(db, now()),
  };
}
