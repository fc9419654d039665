// What the HTTP door knows of a request before its first step: its request ID (the answer's first header), its
// client address and the instant it is metered at. Both routes start from it (ingestRoute.ts,
// integrationsRoute.ts).
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { resolveClientIp, type ClientIp } from '../../http-server/clientIp.ts';
import { requestIdOf } from '../../http-server/requestId.ts';
import type { HeaderPairs } from '../../http-server/respond.ts';
import type { FrontDoorDeps } from './frontDoorDeps.ts';

export interface FrontDoorRequest {
  requestId: string;
  /** The answer's headers so far; X-Request-ID first. */
  headers: HeaderPairs;
  client: ClientIp;
  atMs: number;
}

/** The request's ID (the caller's X-Request-ID when it is a sane token, else a new UUID), client and arrival. */
export function frontDoorRequest(req: IncomingMessage, clients: ClientResolver, now: () => number): FrontDoorRequest {
  const requestId = requestIdOf(req.headers['x-request-id']);
  const headers: HeaderPairs = ['X-Request-ID', requestId];
  const client = clients.of(req);
  return { requestId, headers, client, atMs: now() };
}

export interface ClientResolver {
  of(req: IncomingMessage): ClientIp;
}

/**
 * Resolves client addresses, remembering a connection's own address: on a keep-alive connection every
 * request without X-Forwarded-For has the same client, so it is parsed once per connection, not per request.
 * Behind a trusted proxy each X-Forwarded-For value resolved lately is remembered too, with the proxy's address
 * it was resolved for (the client follows from the two and the trusted proxies, which do not change): a proxy
 * forwards the same few clients again and again, and walking the chain parsed and formatted every address on it.
 */
export function createClientResolver(deps: Pick<FrontDoorDeps, 'trustedProxies'>): ClientResolver {
  const byConnection = new WeakMap<Socket, ClientIp>();
  let byForwardedFor = new Map<string, { peer: string | undefined; client: ClientIp }>();
  return {
    of(req) {
      const forwardedFor = req.headers['x-forwarded-for'];
      if (forwardedFor !== undefined && !deps.trustedProxies.empty) {
        const peer = req.socket.remoteAddress;
        if (typeof forwardedFor !== 'string' || forwardedFor.length > MAX_REMEMBERED_FORWARDED_FOR_LENGTH) {
          return resolveClientIp(peer, forwardedFor, deps.trustedProxies);
        }
        const known = byForwardedFor.get(forwardedFor);
        if (known !== undefined && known.peer === peer) return known.client;
        const client = resolveClientIp(peer, forwardedFor, deps.trustedProxies);
        // Bounded, since the header is the sender's to choose: past the bound the map starts again.
        if (byForwardedFor.size >= MAX_REMEMBERED_FORWARDED_FOR) byForwardedFor = new Map();
        byForwardedFor.set(forwardedFor, { peer, client });
        return client;
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

/** X-Forwarded-For values remembered at most, each at most this long (a chain of a few addresses). */
const MAX_REMEMBERED_FORWARDED_FOR = 4096;
const MAX_REMEMBERED_FORWARDED_FOR_LENGTH = 128;
