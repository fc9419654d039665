// Live notices over SSE, sent once the projection that records them has committed (see publishers.ts).
// Tenant isolation is checked when the subscription opens: a tenant role cannot listen to another tenant.
import { filter, pipe } from 'graphql-yoga';
import type { AdmissionSummary } from '../../governance/index.ts';
import { builder } from '../builder.ts';
import type { ApiContext } from '../context.ts';
import type { LimitChangeNotice } from '../pubsub.ts';
import { limitChangeAt } from '../readModels.ts';
import { loadTenants, type LimitChange } from '../../control-plane/index.ts';
import { AllowanceEnum, DimensionEnum } from './enums.ts';
import { LimitChangeType } from './limitHistory.ts';

interface LimitChanged {
  tenantId: string;
  change: LimitChange;
}

const LimitChangedType = builder.objectRef<LimitChanged>('LimitChanged').implement({
  description: 'A change that may alter the limits of the tenant subscribed to: its own, its tier’s, or the platform default.',
  fields: (t) => ({
    tenantId: t.exposeID('tenantId'),
    change: t.field({ type: LimitChangeType, resolve: (changed) => changed.change }),
  }),
});

const ShedType = builder.objectRef<AdmissionSummary>('Shed').implement({
  description: 'Units and messages (requests) a tenant had shed or refused over a span of whole seconds; a refusal on the per-message charge has messages and no units.',
  fields: (t) => ({
    tenantId: t.exposeID('tenantId'),
    dimension: t.field({ type: DimensionEnum, resolve: (summary) => summary.dimension }),
    allowance: t.field({ type: AllowanceEnum, nullable: true, resolve: (summary) => summary.allowance }),
    at: t.field({ type: 'DateTime', resolve: (summary) => new Date(summary.fromSecond * 1000) }),
    seconds: t.exposeInt('seconds'),
    admittedUnits: t.exposeFloat('admittedUnits'),
    shedUnits: t.exposeFloat('shedUnits'),
    shedMessages: t.exposeFloat('shedMessages'),
    rejectedUnits: t.exposeFloat('rejectedUnits'),
    rejectedMessages: t.exposeFloat('rejectedMessages'),
  }),
});

/** Whether a limit change can alter this tenant's effective limits. */
async function concerns(notice: LimitChangeNotice, tenantId: string, context: ApiContext): Promise<boolean> {
  if (notice.tenantId !== null) return notice.tenantId === tenantId;
  if (notice.tierId === null) return true;
  const tenant = (await loadTenants(context.db, [tenantId])).get(tenantId);
  return tenant?.tierId === notice.tierId;
}

builder.subscriptionType({
  fields: (t) => ({
    limitChanged: t.field({
      type: LimitChangedType,
      args: { tenantId: t.arg.id({ required: true }) },
      authScopes: (_root, { tenantId }) => ({ readTenant: tenantId }),
      subscribe: (_root, { tenantId }, context) =>
        pipe(
          context.pubsub.subscribe('limitChanged'),
          filter((notice: LimitChangeNotice) => concerns(notice, tenantId, context)),
        ),
      resolve: async (notice: LimitChangeNotice, { tenantId }, context) => {
        const change = await limitChangeAt(context.db, notice);
        if (!change) throw new Error(`limit change ${notice.position} was published but is not in the history`);
        return { tenantId, change };
      },
    }),
    sheds: t.field({
      type: ShedType,
      args: { tenantId: t.arg.id({ required: true }) },
      authScopes: (_root, { tenantId }) => ({ auditTenant: tenantId }),
      subscribe: (_root, { tenantId }, context) => context.pubsub.subscribe('sheds', tenantId),
      resolve: (summary: AdmissionSummary) => summary,
    }),
  }),
});
