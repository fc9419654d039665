import { builder } from '../builder.ts';
import type { ApiContext } from '../context.ts';
import { loadCommandBacklogs, type TenantCommandBacklog } from '../../command-backlog/index.ts';
import { UnknownTenantError } from '../queryErrors.ts';
import { LimitSourceEnum } from './enums.ts';

export const CommandBacklogType = builder.objectRef<TenantCommandBacklog>('CommandBacklog').implement({
  description: 'Commands accepted for a tenant and not yet delivered, against its UNDELIVERED_COMMANDS ceiling.',
  authScopes: (backlog) => ({ readTenant: backlog.tenantId }),
  fields: (t) => ({
    tenantId: t.exposeID('tenantId'),
    undelivered: t.exposeInt('undelivered'),
    ceiling: t.exposeInt('ceiling'),
    source: t.field({ type: LimitSourceEnum, resolve: (backlog) => backlog.source }),
  }),
});

export async function loadCommandBacklogsBatch(tenantIds: readonly string[], context: ApiContext): Promise<Array<TenantCommandBacklog | Error>> {
  const byTenant = await loadCommandBacklogs(context.db, tenantIds);
  return tenantIds.map((tenantId) => byTenant.get(tenantId) ?? new UnknownTenantError(tenantId));
}

builder.queryFields((t) => ({
  commandBacklog: t.loadable({
    type: CommandBacklogType,
    args: { tenantId: t.arg.id({ required: true }) },
    authScopes: (_root, { tenantId }) => ({ readTenant: tenantId }),
    load: (tenantIds: string[], context) => loadCommandBacklogsBatch(tenantIds, context),
    resolve: (_root, { tenantId }) => tenantId,
  }),
}));
