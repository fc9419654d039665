// Mounts the GraphQL server at /graphql on the service's listener. Tokens are checked against the JWKS when
// GOVERNANCE_JWKS_URL is set, else against the HS256 secret (from the environment, or created once in the
// data directory: see src/auth/jwtSecret.ts).
import { resolve } from 'node:path';
import type { Route } from '../http-server/route.ts';
import type { Settings } from '../config.ts';
import type { Logger } from '../logger.ts';
import { createTokenVerifier, describeJwtSecret, loadOrCreateJwtSecret, type TokenVerifier } from '../auth/index.ts';
import type { Db, Queryable } from '../db/db.ts';
import type { EventStore } from '../ledger/index.ts';
import type { ControlPlane } from '../control-plane/index.ts';
import type { CommandBacklog } from '../command-backlog/index.ts';
import type { ApiPubSub } from './pubsub.ts';
import type { ReadRouting } from '../read-replica/index.ts';
import { createGraphQLServer, GRAPHQL_PATH } from './createGraphQLServer.ts';

export async function tokenVerifierFor(settings: Settings, logger: Logger): Promise<TokenVerifier> {
  const claims = { issuer: settings.jwtIssuer, audience: settings.jwtAudience, maxTtlSeconds: settings.jwtMaxTtlSeconds };
  if (settings.jwksUrl) return createTokenVerifier({ jwksUrl: settings.jwksUrl, ...claims });
  const jwt = await loadOrCreateJwtSecret(settings);
  // The hint names the secret and the data directory, so a token minted from another shell or directory is
  // signed with this service's secret (`governance token` reads the same settings; --data-dir overrides).
  const dataDir = settings.dataDir === './data' ? '' : ` --data-dir ${resolve(settings.dataDir)}`;
  const mint = jwt.origin === 'environment' ? 'with the same GOVERNANCE_JWT_SECRET set, ' : '';
  logger.info(
    { secret: describeJwtSecret(jwt), created: jwt.origin === 'created' },
    `GraphQL tokens are signed with ${describeJwtSecret(jwt)}; mint one ${mint}with: npx governance token --role OPERATOR --ttl 1h${jwt.origin === 'environment' ? '' : dataDir}`,
  );
  return createTokenVerifier({ secret: jwt.secret, ...claims });
}

/** The parts of the service the API serves (structurally the Service of src/service.ts). */
export interface GraphQLServiceParts {
  settings: Settings;
  logger: Logger;
  db: Queryable;
  store: EventStore;
  controlPlane: ControlPlane;
  commands: CommandBacklog;
  /** Where reads that may be a little stale go (DATABASE_READ_URL). */
  reads?: ReadRouting;
  /** The database, for registering webhooks (a transaction). */
  webhookDb?: Db;
}

/** `pubsub` must be the one given to withApiPublishers when the service's projections started. */
export async function createGraphQLRoute(service: GraphQLServiceParts, pubsub: ApiPubSub): Promise<Route> {
  const yoga = createGraphQLServer({
    db: service.db,
    store: service.store,
    controlPlane: service.controlPlane,
    commandBacklog: service.commands,
    ...(service.webhookDb ? { webhookDb: service.webhookDb } : {}),
    pubsub,
    ...(service.reads ? { reads: service.reads } : {}),
    verify: await tokenVerifierFor(service.settings, service.logger),
    development: process.env.NODE_ENV === 'development',
    logger: service.logger,
  });
  return { path: GRAPHQL_PATH, handle: (req, res) => yoga.handle(req, res) };
}
