import { builder } from '../builder.ts';
import { listTenants, loadTenants, type TenantRecord } from '../../control-plane/index.ts';
import { UnknownTenantError } from '../queryErrors.ts';
import { decodeCursor, pageSize, toConnection } from '../paging.ts';
import { EffectiveLimitType, loadEffectiveLimitsBatch } from './effectiveLimit.ts';
import { CommandBacklogType, loadCommandBacklogsBatch } from './commandBacklog.ts';
import { TenantOverrideType, loadOverridesBatch } from './override.ts';
import { TierType } from './tier.ts';

export const TenantType = builder.loadableObject('Tenant', {
  description: 'One customer on the shared instance (OpenRUM calls it a project).',
  // Checked wherever a Tenant appears, however it was reached: a tenant role sees only its own.
  authScopes: (tenant: TenantRecord) => ({ readTenant: tenant.tenantId }),
  load: async (tenantIds: string[], context): Promise<Array<TenantRecord | Error>> => {
    const byId = await loadTenants(context.db, tenantIds);
    return tenantIds.map((tenantId) => byId.get(tenantId) ?? new UnknownTenantError(tenantId));
  },
  fields: (t) => ({
    id: t.exposeID('tenantId'),
    tier: t.field({
      type: TierType,
      nullable: true,
      resolve: (tenant) => tenant.tierId,
    }),
    effectiveLimits: t.loadableList({
      type: EffectiveLimitType,
      load: (tenantIds: string[], context) => loadEffectiveLimitsBatch(tenantIds, context),
      resolve: (tenant) => tenant.tenantId,
    }),
    overrides: t.loadableList({
      type: TenantOverrideType,
      load: (tenantIds: string[], context) => loadOverridesBatch(tenantIds, context),
      resolve: (tenant) => tenant.tenantId,
    }),
    commandBacklog: t.loadable({
      type: CommandBacklogType,
      load: (tenantIds: string[], context) => loadCommandBacklogsBatch(tenantIds, context),
      resolve: (tenant) => tenant.tenantId,
    }),
  }),
});

const TenantConnection = builder.connectionObject({ type: TenantType, name: 'TenantConnection' });

builder.queryFields((t) => ({
  tenant: t.field({
    type: TenantType,
    nullable: true,
    description: 'A tenant, or null when none is registered with that id.',
    args: { id: t.arg.id({ required: true }) },
    authScopes: (_root, { id }) => ({ readTenant: id }),
    resolve: async (_root, { id }, context) => (await loadTenants(context.db, [id])).get(id) ?? null,
  }),
  tenants: t.field({
    type: TenantConnection,
    description: 'Every tenant, in id order; `search` keeps those whose id contains it (ignoring case).',
    args: { first: t.arg.int(), after: t.arg.string(), search: t.arg.string() },
    authScopes: { readEverything: true },
    resolve: async (_root, args, context) => {
      const first = pageSize(args.first);
      const page = await listTenants(context.db, { first, after: decodeCursor(args.after), search: args.search });
      return toConnection(page, (tenant) => tenant.tenantId);
    },
  }),
}));
