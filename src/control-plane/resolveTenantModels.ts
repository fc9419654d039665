// A tenant's AI model through the governance cascade: its own assignment, then its tier's default model.
// With neither, the tenant has no model entitlement (source NONE): nothing is invented.
import type { Queryable } from '../db/db.ts';
import { resolveCascade } from '../governance/index.ts';
import { checkModel, isCommandError } from './validation.ts';

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
  return isCommandError(model) || model === null ? undefined : model;
}
