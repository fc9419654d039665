import { builder } from '../builder.ts';
import { staleDb } from '../context.ts';
import { isLimitHistoryPosition, limitHistory, type LimitChange } from '../../control-plane/index.ts';
import { decodeCursor, pageSize, toConnection } from '../paging.ts';
import { Forbidden } from './errorClasses.ts';
import { canAuditTenant, canReadEverything } from '../../auth/index.ts';
import { DimensionEnum, LimitModeEnum } from './enums.ts';
import { LimitValueType } from './limitValue.ts';
import { eventRefsAtPositions, LedgerEventRefType } from './ledgerEventRef.ts';

export const LimitChangeType = builder.objectRef<LimitChange>('LimitChange').implement({
  description: 'One change to a limit or to what a tenant inherits, as the ledger recorded it.',
  fields: (t) => ({
    position: t.exposeString('position', { description: 'The ledger position of the event (commit:prepare; a lapse adds :expired).' }),
    at: t.field({ type: 'DateTime', resolve: (change) => change.at }),
    actor: t.exposeString('actor'),
    reason: t.exposeString('reason', { nullable: true }),
    kind: t.exposeString('kind', {
      description: 'What changed, e.g. OVERRIDE_SET, TIER_LIMIT_CLEARED, OVERRIDE_EXPIRED; TIER_SHADOW_LIMIT_SET and OVERRIDE_SHADOW_SET for a shadow limit, *_SHADOW_*_PROMOTED when one was made enforced.',
    }),
    mode: t.field({ type: LimitModeEnum, description: 'SHADOW: a shadow limit was set (previous and value are shadow limits).', resolve: (change) => change.mode }),
    tenantId: t.exposeID('tenantId', { nullable: true }),
    tierId: t.exposeID('tierId', { nullable: true }),
    dimension: t.field({ type: DimensionEnum, nullable: true, resolve: (change) => change.dimension }),
    previous: t.field({ type: LimitValueType, nullable: true, resolve: (change) => change.previous }),
    value: t.field({ type: LimitValueType, nullable: true, resolve: (change) => change.value }),
    previousTierId: t.exposeID('previousTierId', { nullable: true }),
    expiresAt: t.field({ type: 'DateTime', nullable: true, description: 'For overrides: when it lapses (or lapsed).', resolve: (change) => change.expiresAt }),
    previousPolicy: t.exposeString('previousPolicy', { nullable: true, description: 'OVER_LIMIT_POLICY_SET only.' }),
    policy: t.exposeString('policy', { nullable: true, description: 'OVER_LIMIT_POLICY_SET only.' }),
    sourceEvents: t.loadableList({
      type: LedgerEventRefType,
      description: 'The ledger event it was folded from (a lapse: the one that set the override); empty where the ledger is not PostgreSQL.',
      load: (positions: string[], context) => eventRefsAtPositions(context.db, positions),
      resolve: (change) => change.position,
    }),
  }),
});

const LimitChangeConnection = builder.connectionObject({ type: LimitChangeType, name: 'LimitChangeConnection' });

builder.queryFields((t) => ({
  limitHistory: t.field({
    type: LimitChangeConnection,
    description:
      'Limit changes, newest first; filters combine. Cursors stand for ledger positions. Each change is of one level: ' +
      'tenantId set (the tenant\'s own: registration, tier assignment, overrides, policy), only tierId set (a tier\'s limits), ' +
      'neither (a platform default).',
    args: {
      tenantId: t.arg.id({
        description:
          'Only this tenant\'s own changes. The tier and platform changes that moved its limits are not listed here: ' +
          'effectiveLimitTimeline(tenantId, dimension) gives every change of its effective limit whatever level caused it, ' +
          'and limitHistory(tierId:) the changes of its tier.',
      }),
      tierId: t.arg.id({ description: 'Only the changes that name this tier: its limits, and tenants registered on or assigned to it.' }),
      dimension: t.arg({ type: DimensionEnum }),
      first: t.arg.int(),
      after: t.arg.string(),
    },
    // A tenant role reads its own tenant's history only, so it must name its tenant.
    authScopes: (_root, { tenantId }, { actor }) =>
      canReadEverything(actor) || (tenantId !== null && tenantId !== undefined && canAuditTenant(actor, tenantId)),
    unauthorizedError: () => new Forbidden('limitHistory: a tenant role must name its own tenantId'),
    resolve: async (_root, args, context) => {
      const first = pageSize(args.first);
      const page = await limitHistory(staleDb(context), {
        tenantId: args.tenantId ?? undefined,
        tierId: args.tierId ?? undefined,
        dimension: args.dimension ?? undefined,
        first,
        after: decodeCursor(args.after, isLimitHistoryPosition),
      });
      return toConnection(page, (change) => change.position);
    },
  }),
}));
