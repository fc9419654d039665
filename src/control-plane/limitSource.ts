// The Governor's LimitSource, backed by the control-plane read models. loadTenants answers a whole batch in
// one query; a tenant absent from the answer is unknown; a database fault rejects (the Governor then
// treats the source as unreachable and keeps last-known values).
import type { Db } from '../db/db.ts';
import type { LimitSource } from '../governance/index.ts';
import { loadPlatformDefaults } from './loadPlatformDefaults.ts';
import { loadTenantGovernance } from './loadTenantGovernance.ts';

export function createReadModelLimitSource(db: Db, now: () => Date = () => new Date()): LimitSource {
  return {
    async loadTenants(tenantIds) {
      return (await loadTenantGovernance(db, tenantIds, now())).tenants;
    },
    loadPlatformDefaults: () => loadPlatformDefaults(db),
  };
}
