// Steps every front-door route shares: the request ID, the client address, the edge per-IP limit (step 1
// of the order in docs/governance-model.md, before anything is known of the tenant), and the 429 answer.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RequestTarget } from '../../http-server/route.ts';
import type { AdmitDecision } from '../../governance/index.ts';
import { resolveClientIp, type ClientIp } from '../../http-server/clientIp.ts';
import type { FrontDoorDeps } from './frontDoorDeps.ts';
import { addQuotaHeaders, addRateLimitHeaders, addTenantCors, type Quota, type RateLimitVerdict } from '../../http-server/rateLimitHeaders.ts';
import { requestIdOf } from '../../http-server/requestId.ts';
import { sendJson, sendJsonText, type HeaderPairs } from '../../http-server/respond.ts';
import { namesInPath } from './tenantPath.ts';
import { checkEdge } from '../pipeline/index.ts';

export interface FrontDoorRequest {
  requestId: string;
  /** The answer's headers so far; X-Request-ID first. */
  headers: HeaderPairs;
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
  const headers: HeaderPairs = ['X-Request-ID', requestId];
  const client = clients.of(req);
  const atMs = now();
  const edge = checkEdge(deps, client.limitKey, atMs);
  const request: FrontDoorRequest = { requestId, headers, client, atMs };
  if (!edge.admitted) {
    sendRateLimited(res, request, {
      scope: 'ip',
      policy: 'ip',
      limit: edge.limit,
      remaining: edge.remaining,
      retryAfterSeconds: edge.retryAfterSeconds,
    });
    logOutcome(deps, request, undefined, 429);
    return null;
  }
  return request;
}

/**
 * enterFrontDoor, then the `count` names in the path after `prefix` (404 with `pathHelp` when they are not
 * valid IDs), and the tenant's CORS headers. Returns null when the request was answered here.
 */
export function enterTenantPath(
  req: IncomingMessage,
  res: ServerResponse,
  target: RequestTarget,
  deps: FrontDoorDeps,
  clients: ClientResolver,
  now: () => number,
  path: { prefix: string; count: number; help: string },
): { entry: FrontDoorRequest; names: string[] } | null {
  const entry = enterFrontDoor(req, res, deps, clients, now);
  if (entry === null) return null;
  const names = namesInPath(target.pathname, path.prefix, path.count);
  if (names === null) {
    answer(res, deps, entry, undefined, 404, { error: path.help });
    return null;
  }
  addTenantCors(entry.headers);
  return { entry, names };
}

/** Answers with a JSON body that carries the request ID, and logs the outcome (debug) under the same ID. */
export function answer(
  res: ServerResponse,
  deps: FrontDoorDeps,
  request: FrontDoorRequest,
  tenantId: string | undefined,
  status: number,
  body: Record<string, unknown>,
): void {
  body.requestId = request.requestId;
  sendJson(res, status, body, request.headers);
  logOutcome(deps, request, tenantId, status);
}

/**
 * 202 with the units accepted, the answer nearly every request gets: `{"accepted":<units>,"requestId":...}`
 * as answer writes it. Neither value needs escaping: a count, and a request ID (requestId.ts admits nothing
 * JSON escapes).
 */
export function answerAccepted(res: ServerResponse, deps: FrontDoorDeps, request: FrontDoorRequest, tenantId: string, units: number): void {
  sendJsonText(res, 202, `{"accepted":${units},"requestId":"${request.requestId}"}`, request.headers);
  logOutcome(deps, request, tenantId, 202);
}

export function answerRateLimited(
  res: ServerResponse,
  deps: FrontDoorDeps,
  request: FrontDoorRequest,
  tenantId: string,
  verdict: RateLimitVerdict,
): void {
  sendRateLimited(res, request, verdict);
  logOutcome(deps, request, tenantId, 429);
}

function logOutcome(deps: FrontDoorDeps, request: FrontDoorRequest, tenantId: string | undefined, status: number): void {
  // Checked first so a request does not build a log record that the level would throw away.
  if (!deps.logger.isLevelEnabled('debug')) return;
  deps.logger.debug({ requestId: request.requestId, client: request.client.address, tenantId, status }, 'ingest front door');
}

// The 429 body, `{"error":"rate limited","scope":...,"policy":...,"requestId":...}`, written out: a flood is
// answered with it again and again. None of its values needs escaping: the scope and the policy are names
// made here (RateLimitScope, the policy constants below), the request ID is checked (requestId.ts).
function sendRateLimited(res: ServerResponse, request: FrontDoorRequest, verdict: RateLimitVerdict): void {
  addRateLimitHeaders(request.headers, verdict);
  const text = `{"error":"rate limited","scope":"${verdict.scope}","policy":"${verdict.policy}","requestId":"${request.requestId}"}`;
  sendJsonText(res, 429, text, request.headers);
}

/** The 429 verdict for a Governor refusal. Unconfirmed names on the shared overflow say so in the policy name. */
export function tenantVerdict(decision: Readonly<AdmitDecision>, charge: 'messages' | 'readings' | 'requests'): RateLimitVerdict {
  if (decision.quotaExceeded === true) return quotaVerdict(decision, charge);
  return {
    scope: 'tenant',
    policy: (decision.scope === 'overflow' ? OVERFLOW_POLICIES : TENANT_POLICIES)[charge],
    limit: decision.limit,
    remaining: decision.remaining,
    retryAfterSeconds: decision.retryAfterSeconds,
  };
}

/**
 * The 429 verdict for a refusal by the period quota: X-RateLimit-Scope quota, Retry-After to the period's end,
 * RateLimit-Policy with the quota's units and the period's length as its window.
 */
export function quotaVerdict(decision: Readonly<AdmitDecision>, charge: 'messages' | 'readings' | 'requests'): RateLimitVerdict {
  return {
    scope: 'quota',
    policy: QUOTA_POLICIES[charge],
    limit: decision.limit,
    remaining: 0,
    retryAfterSeconds: decision.retryAfterSeconds,
    windowSeconds: decision.quotaPeriod === 'MONTH' ? 30 * 86_400 : 86_400,
  };
}

const QUOTA_POLICIES = { messages: 'quota-messages', readings: 'quota-readings', requests: 'quota-requests' } as const;

// The policy names, made once rather than per refusal.
const TENANT_POLICIES = { messages: 'tenant-messages', readings: 'tenant-readings', requests: 'tenant-requests', uplinks: 'tenant-uplinks' } as const;
const OVERFLOW_POLICIES = { messages: 'overflow-messages', readings: 'overflow-readings', requests: 'overflow-requests', uplinks: 'overflow-uplinks' } as const;

/** The policy name of an admitted charge, as tenantVerdict names a refused one. */
export function chargePolicy(scope: AdmitDecision['scope'], charge: 'messages' | 'readings' | 'requests' | 'uplinks'): string {
  return (scope === 'overflow' ? OVERFLOW_POLICIES : TENANT_POLICIES)[charge];
}

/**
 * What the message and readings charges of an admitted ingest request left, kept by the request until it is
 * answered (the Governor's decision record is overwritten by the next charge). Plain fields of the request's
 * own object, so keeping them allocates nothing.
 */
export interface ChargesLeft {
  messagePolicy: string;
  messageLimit: number;
  messageRemaining: number;
  messageBurst: number;
  readingsPolicy: string;
  readingsLimit: number;
  readingsRemaining: number;
  readingsBurst: number;
}

// Filled just before the fields are written, at once: one pair serves every request.
const firstQuota: Quota = { policy: '', limit: 0, remaining: 0, burst: 0 };
const secondQuota: Quota = { policy: '', limit: 0, remaining: 0, burst: 0 };

/**
 * The RateLimit-Policy and RateLimit fields of an admitted ingest answer (202): what its message and readings
 * charges left, so a client can slow down before it is refused (README, "RateLimit fields on admitted answers").
 */
export function addChargesLeft(request: FrontDoorRequest, left: Readonly<ChargesLeft>): void {
  firstQuota.policy = left.messagePolicy;
  firstQuota.limit = left.messageLimit;
  firstQuota.remaining = left.messageRemaining;
  firstQuota.burst = left.messageBurst;
  secondQuota.policy = left.readingsPolicy;
  secondQuota.limit = left.readingsLimit;
  secondQuota.remaining = left.readingsRemaining;
  secondQuota.burst = left.readingsBurst;
  addQuotaHeaders(request.headers, firstQuota, secondQuota);
}

/** The RateLimit fields for one charge decided just now, read from the Governor's decision record at once. */
export function addDecidedQuota(request: FrontDoorRequest, decision: Readonly<AdmitDecision>, charge: 'messages' | 'readings' | 'uplinks'): void {
  firstQuota.policy = chargePolicy(decision.scope, charge);
  firstQuota.limit = decision.limit;
  firstQuota.remaining = decision.remaining;
  firstQuota.burst = decision.burst;
  addQuotaHeaders(request.headers, firstQuota, null);
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
