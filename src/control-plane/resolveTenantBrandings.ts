// A tenant's branding through the governance cascade: its own, then the operator's branding.default
// setting, then the shipped default (always accepted, so there is always an answer).
import type { Queryable } from '../db/db.ts';
import { resolveCascade } from '../governance/index.ts';
import type { Branding } from '../ledger/catalog/controlPlane.ts';
import { BRANDING_DEFAULT_KEY } from './view.ts';
import { checkBranding, isCommandError } from './validation.ts';

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
  return isCommandError(branding) ? undefined : branding;
}
