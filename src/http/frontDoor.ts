// Steps every front-door route shares: the request ID, the client address, the edge per-IP limit (step 1
// of the spec's order, before anything is known of the tenant), and the 429 answer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { AdmitDecision } from '../governance/governor.ts';
import { resolveClientIp, type ClientIp } from './clientIp.ts';
import type { FrontDoorDeps } from './frontDoorDeps.ts';
import { setRateLimitHeaders, type RateLimitVerdict } from './rateLimitHeaders.ts';
import { requestIdOf } from './requestId.ts';
import { sendJson } from './respond.ts';

export interface FrontDoorRequest {
  requestId: string;
  client: ClientIp;
  atMs: number;
}

/**
 * Sets X-Request-ID, resolves the client and applies the edge limit. Returns null when the request was
 * answered here (429, scope ip).
 */
export function enterFrontDoor(
  req: IncomingMessage,
  res: ServerResponse,
  deps: FrontDoorDeps,
  clients: ClientResolver,
  now: () => number,
): FrontDoorRequest | null {
  const requestId = requestIdOf(req.headers['x-request-id']);
  res.setHeader('X-Request-ID', requestId);
  const client = clients.of(req);
  const atMs = now();
  const edge = deps.edgeLimit.admit(client.limitKey, atMs);
  if (!edge.admitted) {
    sendRateLimited(res, requestId, {
      scope: 'ip',
      policy: 'ip',
      limit: edge.limit,
      remaining: edge.remaining,
      retryAfterSeconds: edge.retryAfterSeconds,
    });
    deps.logger.debug({ requestId, client: client.address, status: 429, scope: 'ip' }, 'ingest refused at the edge');
    return null;
  }
  return { requestId, client, atMs };
}

export function sendRateLimited(res: ServerResponse, requestId: string, verdict: RateLimitVerdict): void {
  setRateLimitHeaders(res, verdict);
  sendJson(res, 429, { error: 'rate limited', scope: verdict.scope, policy: verdict.policy, requestId });
}

/** The 429 verdict for a Governor refusal. Unconfirmed names on the shared overflow say so in the policy name. */
export function tenantVerdict(decision: AdmitDecision, charge: 'messages' | 'readings' | 'requests'): RateLimitVerdict {
  return {
    scope: 'tenant',
    policy: `${decision.scope === 'overflow' ? 'overflow' : 'tenant'}-${charge}`,
    limit: decision.limit,
    remaining: decision.remaining,
    retryAfterSeconds: decision.retryAfterSeconds,
  };
}

export interface ClientResolver {
  of(req: IncomingMessage): ClientIp;
}

/**
 * Resolves client addresses, remembering a connection's own address: on a keep-alive connection every
 * request without X-Forwarded-For has the same client, so it is parsed once per connection, not per request.
 */
export function createClientResolver(deps: Pick<FrontDoorDeps, 'trustedProxies'>): ClientResolver {
  const byConnection = new WeakMap<Socket, ClientIp>();
  return {
    of(req) {
      const forwardedFor = req.headers['x-forwarded-for'];
      if (forwardedFor !== undefined && !deps.trustedProxies.empty) {
        return resolveClientIp(req.socket.remoteAddress, forwardedFor, deps.trustedProxies);
      }
      let client = byConnection.get(req.socket);
      if (client === undefined) {
        client = resolveClientIp(req.socket.remoteAddress, undefined, deps.trustedProxies);
        byConnection.set(req.socket, client);
      }
      return client;
    },
  };
}
