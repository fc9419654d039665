// Mounts the GraphQL server at /graphql on the service's listener. Tokens are checked against the JWKS when
// GOVERNANCE_JWKS_URL is set, else against the HS256 secret (from the environment, or created once in the
// data directory: see auth/jwtSecret.ts).
import type { Route } from '../server.ts';
import type { Settings } from '../config.ts';
import type { Logger } from '../logger.ts';
import { loadOrCreateJwtSecret } from './auth/jwtSecret.ts';
import { createTokenVerifier, type TokenVerifier } from './auth/verifyToken.ts';
import type { ApiDependencies } from './context.ts';
import { createGraphQLServer, GRAPHQL_PATH } from './createGraphQLServer.ts';

export async function tokenVerifierFor(settings: Settings, logger: Logger): Promise<TokenVerifier> {
  if (settings.jwksUrl) return createTokenVerifier({ jwksUrl: settings.jwksUrl });
  const jwt = await loadOrCreateJwtSecret(settings);
  if (jwt.origin !== 'environment') {
    logger.info(
      { secretFile: jwt.path, created: jwt.origin === 'created' },
      'GraphQL tokens are signed with the secret in the data directory; mint one with: npm run governance -- token --role OPERATOR --ttl 1h',
    );
  }
  return createTokenVerifier({ secret: jwt.secret });
}

export async function createGraphQLRoute(
  service: { settings: Settings; logger: Logger },
  dependencies: ApiDependencies,
): Promise<Route> {
  const yoga = createGraphQLServer({
    ...dependencies,
    verify: await tokenVerifierFor(service.settings, service.logger),
    development: process.env.NODE_ENV === 'development',
    logger: service.logger,
  });
  return { path: GRAPHQL_PATH, handle: (req, res) => yoga.handle(req, res) };
}
