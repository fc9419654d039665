import type { Caller } from '../../control-plane/index.ts';
import { builder } from '../builder.ts';
import { ROLES } from '../../auth/index.ts';

const RoleEnum = builder.enumType('Role', { values: ROLES });

const ViewerType = builder.objectRef<Caller>('Viewer').implement({
  description: 'Who the bearer token names.',
  fields: (t) => ({
    id: t.exposeID('id'),
    role: t.field({ type: RoleEnum, resolve: (actor) => actor.role }),
    tenantId: t.exposeID('tenantId', { nullable: true }),
  }),
});

builder.queryFields((t) => ({
  viewer: t.field({ type: ViewerType, resolve: (_root, _args, { actor }) => actor }),
}));
