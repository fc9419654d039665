import type { Actor } from '../../control-plane/actor.ts';
import { builder } from '../builder.ts';

const ViewerType = builder.objectRef<Actor>('Viewer').implement({
  description: 'Who the bearer token names.',
  fields: (t) => ({
    id: t.exposeID('id'),
    role: t.exposeString('role'),
    tenantId: t.exposeID('tenantId', { nullable: true }),
  }),
});

builder.queryFields((t) => ({
  viewer: t.field({ type: ViewerType, resolve: (_root, _args, { actor }) => actor }),
}));
