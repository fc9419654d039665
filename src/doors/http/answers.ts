// How the HTTP door answers a request, whatever step answers it: the JSON bodies (each carrying the request ID),
// the 429 contract's headers and body, the RateLimit fields of an admitted answer, and the step-specific
// answers both routes give the same way (413, 401, the sink's outcome). The routes decide, in order
// (ingestRoute.ts, integrationsRoute.ts); this file only writes what they decided. README.md, "429 contract".
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdmitDecision, ChargeOutcome } from '../../governance/index.ts';
import type { FrontDoorDeps } from './frontDoorDeps.ts';
import type { FrontDoorRequest } from './frontDoor.ts';
import { addQuotaHeaders, addRateLimitHeaders, type Quota, type RateLimitVerdict } from '../../http-server/rateLimitHeaders.ts';
import { closeAfterRefusal } from '../../http-server/readBody.ts';
import { sendJson, sendJsonText } from '../../http-server/respond.ts';
import type { AcceptedBatch, EdgeDecision, SinkOutcome } from '../pipeline/index.ts';

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
function answerAccepted(res: ServerResponse, deps: FrontDoorDeps, request: FrontDoorRequest, tenantId: string, units: number): void {
  sendJsonText(res, 202, `{"accepted":${units},"requestId":"${request.requestId}"}`, request.headers);
  logOutcome(deps, request, tenantId, 202);
}

/** 429 with the verdict's headers: the edge limit's (no tenant known yet) or a tenant's. */
export function answerRateLimited(
  res: ServerResponse,
  deps: FrontDoorDeps,
  request: FrontDoorRequest,
  tenantId: string | undefined,
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

/** The 429 verdict for a refusal by the edge per-IP limit. */
export function edgeVerdict(edge: Readonly<EdgeDecision>): RateLimitVerdict {
  return { scope: 'ip', policy: 'ip', limit: edge.limit, remaining: edge.remaining, retryAfterSeconds: edge.retryAfterSeconds };
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
function quotaVerdict(decision: Readonly<AdmitDecision>, charge: 'messages' | 'readings' | 'requests'): RateLimitVerdict {
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

/** 413 for a body over the cap: the rest of it is discarded and the connection closed (closeAfterRefusal). */
export function answerTooLarge(
  req: IncomingMessage,
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  tenantId: string,
  maxBodyBytes: number,
): void {
  closeAfterRefusal(req, res, entry.headers);
  answer(res, deps, entry, tenantId, 413, { error: `the body is larger than ${maxBodyBytes} bytes` });
}

/**
 * 413 for a request larger than the most its tenant's allowance can ever grant (the Governor's `neverFits`):
 * no wait would admit it, so it is not told to retry. The body names the burst and the request's size.
 */
export function answerNeverFits(
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  tenantId: string,
  decision: Readonly<AdmitDecision>,
  units: number,
  unitName: 'readings' | 'uplinks',
): void {
  const burst = Math.floor(decision.burst);
  answer(res, deps, entry, tenantId, 413, {
    error: `${units} ${unitName} can never be admitted at once: the tenant's ${unitName === 'readings' ? 'readings' : 'integrations'} burst is ${burst}; send at most ${burst} per request`,
    units,
    burst,
  });
}

/** 401 for an X-Device-Key that may not post here (missing, unknown, revoked, another tenant's or device's). */
export function answerUnauthorized(res: ServerResponse, deps: FrontDoorDeps, entry: FrontDoorRequest, tenantId: string, message: string): void {
  entry.headers.push('WWW-Authenticate', 'DeviceKey realm="ingest"');
  answer(res, deps, entry, tenantId, 401, { error: message });
}

/**
 * Answers the sink's outcome and says what the held charge is to be settled with:
 * - taken: 202 with the units accepted ('admitted'; a retry the sink already held, by its X-Request-ID, is
 *   answered and counted the same, since its first try was withdrawn when it was not answered 202);
 * - refused for its content, which no retry can change: 413 when larger than the pipeline takes, 400 when it
 *   cannot be serialised ('rejected');
 * - the sink failed: 503 with Retry-After ('withdrawn', the retry is counted).
 */
export function answerSinkOutcome(
  res: ServerResponse,
  deps: FrontDoorDeps,
  entry: FrontDoorRequest,
  batch: AcceptedBatch,
  outcome: SinkOutcome,
): ChargeOutcome {
  if (outcome.status === 'unavailable') {
    const failure = batch.route === 'http' ? 'ingest sink failed' : 'integration sink failed';
    deps.logger.error({ err: outcome.error, requestId: entry.requestId, tenantId: batch.tenantId }, failure);
    entry.headers.push('Retry-After', String(SINK_RETRY_AFTER_SECONDS));
    answer(res, deps, entry, batch.tenantId, 503, { error: 'the reading pipeline is unavailable; retry' });
    return 'withdrawn';
  }
  if (outcome.status === 'refused') {
    answer(res, deps, entry, batch.tenantId, outcome.reason === 'too-large' ? 413 : 400, { error: outcome.message });
    return 'rejected';
  }
  answerAccepted(res, deps, entry, batch.tenantId, batch.units);
  return 'admitted';
}

/** Retry-After on a 503 from the sink, as on every 503 of the service (docs/faults.md). */
const SINK_RETRY_AFTER_SECONDS = 1;
