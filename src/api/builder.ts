// The Pothos builder and nothing else: plugins, scalars' shapes, context and auth scopes. Types and fields
// live in schema/, one file per type.
import SchemaBuilder from '@pothos/core';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import ErrorsPlugin from '@pothos/plugin-errors';
import RelayPlugin from '@pothos/plugin-relay';
import DataloaderPlugin from '@pothos/plugin-dataloader';
import InputGuardPlugin from './inputGuard.ts';
import type { ApiContext } from './context.ts';
import { authScopes, type ApiAuthScopes } from './auth/scopes.ts';
import { Forbidden } from './schema/errorClasses.ts';

export const builder = new SchemaBuilder<{
  Context: ApiContext;
  AuthScopes: ApiAuthScopes;
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: Date; Output: Date | string };
    JSON: { Input: unknown; Output: unknown };
    ID: { Input: string; Output: string };
  };
}>({
  // Errors before scope-auth: a mutation that lists Forbidden among its errors answers a refusal as a typed
  // result; on every other field the refusal stays a GraphQL error with code FORBIDDEN and no data.
  // Errors before dataloader, as the errors plugin requires. The input guard inside errors (so the typed
  // InvalidInput it raises becomes the payload's member) and before every other plugin and resolver.
  plugins: [ErrorsPlugin, InputGuardPlugin, ScopeAuthPlugin, RelayPlugin, DataloaderPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    authScopes,
    // Subscriptions are refused when they are opened, not silently filtered event by event.
    authorizeOnSubscribe: true,
    unauthorizedError: (_parent, _context, info) => new Forbidden(`not allowed to read ${info.parentType.name}.${info.fieldName}`),
  },
  errors: { defaultTypes: [] },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    nodeQueryOptions: false,
    nodesQueryOptions: false,
  },
});
