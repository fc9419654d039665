// Every GraphQL request must carry a valid bearer token; one that does not is answered 401 before parsing,
// so an anonymous caller learns nothing about the schema. The GraphiQL page itself is static HTML and is
// rendered by yoga before this hook runs; its requests carry the token the user types into its headers.
import type { Plugin } from 'graphql-yoga';
import type { Actor } from '../control-plane/actor.ts';
import type { TokenVerifier } from './auth/verifyToken.ts';

const UNAUTHENTICATED = JSON.stringify({
  errors: [{ message: 'a valid bearer token is required', extensions: { code: 'UNAUTHENTICATED' } }],
});

export function useAuth(verify: TokenVerifier): Plugin<{ actor: Actor }> {
  const actors = new WeakMap<Request, Actor>();
  return {
    async onRequest({ request, endResponse, fetchAPI }) {
      const token = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1];
      const actor = token ? await verify(token) : null;
      if (!actor) {
        endResponse(
          new fetchAPI.Response(UNAUTHENTICATED, {
            status: 401,
            headers: { 'content-type': 'application/json', 'www-authenticate': 'Bearer' },
          }),
        );
        return;
      }
      actors.set(request, actor);
    },
    onContextBuilding({ context, extendContext }) {
      const actor = actors.get(context.request);
      // onRequest answered 401 for every request without one, so this is a fault, not a refusal.
      if (!actor) throw new Error('request reached execution without an authenticated actor');
      extendContext({ actor });
    },
  };
}
