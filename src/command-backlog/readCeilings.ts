import type { Queryable } from '../db/db.ts';
import type { CeilingSource, TenantCeiling } from './types.ts';

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
