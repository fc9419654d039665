// At start, every tenant already registered is confirmed to the Governor; from then on the tenants
// projection confirms each new registration after it commits (projections/tenants.ts).
import type { Queryable } from '../db/db.ts';
import type { TenantNameConfirmer } from './controlPlane.ts';

/** Returns how many names were confirmed. */
export async function feedConfirmedTenants(q: Queryable, governor: TenantNameConfirmer): Promise<number> {
  const { rows } = await q.query<{ tenant_id: string }>('SELECT tenant_id FROM gl_tenants');
  for (const row of rows) governor.confirmTenant(row.tenant_id);
  return rows.length;
}
