// The yoga server over the Pothos schema: GraphiQL (served from the package) on GET from a browser, POST, and subscriptions over SSE,
// behind bearer-token auth and query-shape limits. Tests call `yoga.fetch` on it in-process; the service
// mounts it at /graphql through createGraphQLRoute.
import { createYoga, maskError, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import type { renderGraphiQL as RenderGraphiQL } from '@graphql-yoga/render-graphiql';
import { storageUnavailableIn } from '../db/storageUnavailable.ts';
import { GraphQLError } from './graphql.ts';
import { graphiqlSecurityHeaders, withConsoleToken } from '../console/index.ts';
import type { Logger } from '../logger.ts';
import type { ApiDependencies } from './context.ts';
import type { ReadSourceRecord } from '../read-replica/index.ts';
import { schema } from './schema/index.ts';
import type { TokenVerifier } from '../auth/index.ts';
import { useAuth } from './useAuth.ts';
import { useProtection } from './useProtection.ts';
import { useReadReplica } from './useReadReplica.ts';
import { createEffectiveLimitsCache, invalidateOnCommits, type EffectiveLimitsCache } from './effectiveLimitsCache.ts';

export const GRAPHQL_PATH = '/graphql';

export interface GraphQLServerOptions extends ApiDependencies {
  verify: TokenVerifier;
  /** Unmasked error messages; only where NODE_ENV=development. */
  development?: boolean;
  logger?: Logger;
}

type ServerContext = ApiDependencies & { effectiveLimits: EffectiveLimitsCache; readSource: ReadSourceRecord & { mutation: boolean } };

export type GraphQLServer = YogaServerInstance<Record<string, unknown>, ServerContext>;

export function createGraphQLServer({ verify, development = false, logger, ...dependencies }: GraphQLServerOptions): GraphQLServer {
  const effectiveLimits = createEffectiveLimitsCache();
  invalidateOnCommits(effectiveLimits, dependencies.pubsub);
  return createYoga<Record<string, unknown>, ServerContext>({
    schema,
    graphqlEndpoint: GRAPHQL_PATH,
    graphiql: { title: 'governance-ledger' },
    // GraphiQL's code, styles and editor workers come inlined from the package, not from a CDN: the page works
    // on a network without the internet. Opened from the console, it starts with the console's token.
    renderGraphiQL: renderGraphiQLWhenAsked,
    landingPage: false,
    // Outside development a fault answers "Unexpected error." and is logged; typed errors and GraphQLErrors
    // (FORBIDDEN, UNKNOWN_TENANT, BAD_USER_INPUT) are meant for the client and pass unchanged. The database
    // being away is no bug but a state a client waits out: SERVICE_UNAVAILABLE, HTTP 503 with Retry-After.
    maskedErrors: { maskError: (error, message, isDev) => serviceUnavailable(error) ?? (development ? error : maskError(error, message, isDev)) as Error },
    logging: logger
      ? {
          debug: (...args: unknown[]) => logger.debug({ args }, 'graphql'),
          info: (...args: unknown[]) => logger.info({ args }, 'graphql'),
          warn: (...args: unknown[]) => logger.warn({ args }, 'graphql'),
          error: (...args: unknown[]) => logger.error({ args }, 'graphql'),
        }
      : false,
    plugins: [useAuth(verify), useProtection(), useReadReplica(), useGraphiQLSecurityHeaders()],
    // A new object per request: the dataloaders cache per context, so nothing is shared between requests.
    // useAuth adds the actor, completing ApiContext.
    context: () => ({ ...dependencies, effectiveLimits, readSource: { replicaReads: 0, stalenessSeconds: 0, mutation: false } }),
  });
}

/** The GraphQL error for work that failed because the database is unavailable; undefined for any other error. */
function serviceUnavailable(error: unknown): GraphQLError | undefined {
  const unavailable = storageUnavailableIn(error);
  if (!unavailable) return undefined;
  const at = error instanceof GraphQLError ? error : undefined;
  const retryAfter = String(unavailable.retryAfterSeconds);
  return new GraphQLError('the database is unavailable; retry', {
    nodes: at?.nodes,
    path: at?.path,
    extensions: {
      code: 'SERVICE_UNAVAILABLE',
      retryAfterSeconds: unavailable.retryAfterSeconds,
      http: { status: 503, headers: { 'Retry-After': retryAfter } },
    },
  });
}

// GraphiQL's page comes in a module of about 9 MB: loaded at the first request for the page, not at every start,
// where reading and compiling it was about a tenth of the service's start-up on PostgreSQL. The page is the same
// for the same options, so it is rendered (and its scripts hashed for its Content-Security-Policy) once.
let graphiqlPage: Promise<typeof RenderGraphiQL> | undefined;
let rendered: { optionsKey: string; html: string; headers: Record<string, string> } | undefined;
async function renderGraphiQLWhenAsked(options: Parameters<typeof RenderGraphiQL>[0]): Promise<string> {
  graphiqlPage ??= import('@graphql-yoga/render-graphiql').then(
    ({ renderGraphiQL }) => withConsoleToken(renderGraphiQL),
    (error: unknown) => {
      graphiqlPage = undefined; // the next request tries again
      throw error;
    },
  );
  const render = await graphiqlPage;
  const optionsKey = JSON.stringify(options ?? {});
  if (rendered?.optionsKey !== optionsKey) {
    const html = render(options);
    rendered = { optionsKey, html, headers: graphiqlSecurityHeaders(html) };
  }
  return rendered.html;
}

/**
 * GraphiQL's page gets its Content-Security-Policy (its inline scripts by hash, no framing), nosniff and
 * Referrer-Policy: yoga answers it with a Content-Type only. Every other HTML answer of /graphql gets them
 * too, with no script allowed at all.
 */
function useGraphiQLSecurityHeaders(): Plugin {
  return {
    onResponse({ response }) {
      if (!response.headers.get('content-type')?.startsWith('text/html')) return;
      const headers = rendered?.headers ?? graphiqlSecurityHeaders('');
      for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
    },
  };
}
