// What the control-plane read models and the ledger say about tenants: their records by id or by page, the
// overrides in force, their AI model and branding through the cascade, and whether one is registered.
import type { Queryable } from '../db/db.ts';
import { type OverLimitPolicy, type Dimension, resolveCascade } from '../governance/index.ts';
import { type Branding, tenantStream } from '../ledger/index.ts';
import { checkModel, isControlPlaneError, checkBranding } from './validation.ts';
import { BRANDING_DEFAULT_KEY } from './view.ts';
import type { EventStore } from '../ledger/index.ts';

// Tenants by id, one query; unregistered ids are absent from the map.
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

// A page of tenants in id order; the cursor is the last tenant id of the page.
export interface Page<Node> {
  nodes: Node[];
  hasNextPage: boolean;
  endCursor: string | null;
}

export const MAX_PAGE_SIZE = 500;

export function pageSize(first: number | undefined, fallback = 50): number {
  if (first === undefined) return fallback;
  if (!Number.isInteger(first) || first < 0 || first > MAX_PAGE_SIZE) {
    throw new RangeError(`first must be a whole number from 0 to ${MAX_PAGE_SIZE}, got ${first}`);
  }
  return first;
}

/** `search` keeps the tenants whose id contains it, ignoring case. */
export async function listTenants(
  q: Queryable,
  options: { first?: number; after?: string | null; search?: string | null } = {},
): Promise<Page<TenantRecord>> {
  const first = pageSize(options.first);
  const { rows } = await q.query<TenantRow>(
    `SELECT ${TENANT_COLUMNS} FROM gl_tenants
      WHERE ($1::text IS NULL OR tenant_id > $1) AND ($3::text IS NULL OR strpos(lower(tenant_id), lower($3)) > 0)
      ORDER BY tenant_id LIMIT $2`,
    [options.after ?? null, first + 1, options.search || null],
  );
  const nodes = rows.slice(0, first).map(toTenantRecord);
  return { nodes, hasNextPage: rows.length > first, endCursor: nodes.at(-1)?.tenantId ?? null };
}

// The overrides in force at `at` for many tenants, one query. An override whose expiresAt has passed is
// not in force and is not returned (the limit history shows its lapse).
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

interface OverrideRow {
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
  const { rows } = await q.query<OverrideRow>(
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

// A tenant's AI model through the governance cascade: its own assignment, then its tier's default model.
// With neither, the tenant has no model entitlement (source NONE): nothing is invented.
export type ModelSource = 'TENANT_ASSIGNMENT' | 'TIER_DEFAULT';

export interface TenantModel {
  model: string | null;
  source: ModelSource | 'NONE';
}

/** Unregistered tenants are absent from the map. One query. */
export async function resolveTenantModels(q: Queryable, tenantIds: readonly string[]): Promise<Map<string, TenantModel>> {
  const result = new Map<string, TenantModel>();
  if (tenantIds.length === 0) return result;
  const { rows } = await q.query<{ tenant_id: string; model: string | null; default_model: string | null }>(
    `SELECT t.tenant_id, t.model, tr.default_model
     FROM gl_tenants t LEFT JOIN gl_tiers tr ON tr.tier_id = t.tier_id
     WHERE t.tenant_id = ANY($1::text[])`,
    [[...new Set(tenantIds)]],
  );
  for (const row of rows) {
    const resolved = resolveCascade<string, ModelSource>(
      [
        { source: 'TENANT_ASSIGNMENT', value: row.model },
        { source: 'TIER_DEFAULT', value: row.default_model },
      ],
      acceptModel,
    );
    result.set(row.tenant_id, resolved ? { model: resolved.value, source: resolved.source } : { model: null, source: 'NONE' });
  }
  return result;
}

function acceptModel(raw: unknown): string | undefined {
  if (raw === null || raw === undefined) return undefined;
  const model = checkModel(raw);
  return isControlPlaneError(model) || model === null ? undefined : model;
}

// A tenant's branding through the governance cascade: its own, then the operator's branding.default
// setting, then the shipped default (always accepted, so there is always an answer).
export type BrandingSource = 'TENANT' | 'BRANDING_DEFAULT' | 'SHIPPED_DEFAULT';

export const SHIPPED_BRANDING: Branding = { productName: 'DeviceChain' };

export interface TenantBranding {
  branding: Branding;
  source: BrandingSource;
}

/** Unregistered tenants are absent from the map. One query. */
export async function resolveTenantBrandings(q: Queryable, tenantIds: readonly string[]): Promise<Map<string, TenantBranding>> {
  const result = new Map<string, TenantBranding>();
  if (tenantIds.length === 0) return result;
  const { rows } = await q.query<{ tenant_id: string; branding: unknown; branding_default: unknown }>(
    `SELECT t.tenant_id, t.branding,
       (SELECT s.value FROM gl_platform_settings s WHERE s.key = $2) AS branding_default
     FROM gl_tenants t WHERE t.tenant_id = ANY($1::text[])`,
    [[...new Set(tenantIds)], BRANDING_DEFAULT_KEY],
  );
  for (const row of rows) {
    const resolved = resolveCascade<Branding, BrandingSource>(
      [
        { source: 'TENANT', value: row.branding },
        { source: 'BRANDING_DEFAULT', value: row.branding_default },
        { source: 'SHIPPED_DEFAULT', value: SHIPPED_BRANDING },
      ],
      acceptBranding,
    );
    result.set(row.tenant_id, { branding: resolved!.value, source: resolved!.source });
  }
  return result;
}

function acceptBranding(raw: unknown): Branding | undefined {
  if (raw === null || raw === undefined) return undefined;
  const branding = checkBranding(raw);
  return isControlPlaneError(branding) ? undefined : branding;
}

// Whether the ledger has registered a tenant, from its stream itself: right after registerTenant this is
// already true, before any projection has caught up.
export async function tenantIsRegistered(store: Pick<EventStore, 'readStream'>, tenantId: string): Promise<boolean> {
  const events = await store.readStream(tenantStream(tenantId));
  return events.some((event) => event.type === 'TenantRegistered');
}
