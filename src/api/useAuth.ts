// Every GraphQL request must carry a valid bearer token; one that does not is answered 401 before parsing,
// so an anonymous caller learns nothing about the schema. The GraphiQL page itself is static HTML and is
// rendered by yoga before this hook runs; its requests carry the token the user types into its headers.
import type { Plugin } from 'graphql-yoga';
import type { Caller } from '../control-plane/index.ts';
import { isRefusal, type TokenVerifier } from '../auth/index.ts';

const unauthenticated = (message: string) => JSON.stringify({ errors: [{ message, extensions: { code: 'UNAUTHENTICATED' } }] });

export function useAuth(verify: TokenVerifier): Plugin<{ actor: Caller }> {
  const actors = new WeakMap<Request, Caller>();
  return {
    async onRequest({ request, endResponse, fetchAPI }) {
      const token = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '')?.[1];
      const checked = token ? await verify(token) : { refused: 'a valid bearer token is required' };
      if (isRefusal(checked)) {
        endResponse(
          new fetchAPI.Response(unauthenticated(checked.refused), {
            status: 401,
            headers: { 'content-type': 'application/json', 'www-authenticate': 'Bearer' },
          }),
        );
        return;
      }
      actors.set(request, checked);
    },
    onContextBuilding({ context, extendContext }) {
      const actor = actors.get(context.request);
      // onRequest answered 401 for every request without one, so this is a fault, not a refusal.
      if (!actor) throw new Error('request reached execution without an authenticated actor');
      extendContext({ actor });
    },
  };
}
