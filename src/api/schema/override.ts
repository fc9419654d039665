import { builder } from '../builder.ts';
import type { ApiContext } from '../context.ts';
import { loadOverrideRecords, type OverrideRecord } from '../readModels.ts';
import { DimensionEnum } from './enums.ts';
import { LimitValueType } from './limitValue.ts';

export const TenantOverrideType = builder.objectRef<OverrideRecord>('TenantOverride').implement({
  description: 'A limit set for one tenant that wins over its tier and the platform default until it is cleared or expires.',
  fields: (t) => ({
    dimension: t.field({ type: DimensionEnum, resolve: (override) => override.dimension }),
    value: t.field({ type: LimitValueType, resolve: (override) => override.value }),
    expiresAt: t.field({ type: 'DateTime', nullable: true, resolve: (override) => override.expiresAt }),
  }),
});

export async function loadOverridesBatch(tenantIds: readonly string[], context: ApiContext): Promise<OverrideRecord[][]> {
  const byTenant = await loadOverrideRecords(context.db, tenantIds);
  return tenantIds.map((tenantId) => byTenant.get(tenantId) ?? []);
}
