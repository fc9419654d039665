// The 429 contract (docs/governance-model.md): Retry-After in whole seconds (at least 1) from the limiter, X-RateLimit-Scope,
// X-RateLimit-Limit, and the IETF fields in the structured-field form of draft-ietf-httpapi-ratelimit-headers-10
// (the form the draft has kept since -08):
//   RateLimit-Policy: "tenant-readings";q=1000;w=1
//   RateLimit: "tenant-readings";r=0;t=1
// Every limit here is a rate per second, so each policy's window w is 1 and q is the per-second limit.
// An admitted answer (202) carries the same two IETF fields (addQuotaHeaders), one item per limit the request
// was charged on, so a client can slow down before it is refused: r is what is left, t the whole seconds until
// the bucket is full again (0 when it is).
import type { HeaderPairs } from './respond.ts';

/** 'quota': refused for the tenant's period quota (a day's or month's units), not a rate. */
export type RateLimitScope = 'ip' | 'tenant' | 'quota';

export interface RateLimitVerdict {
  scope: RateLimitScope;
  /** The policy name in RateLimit-Policy: which limit decided ("ip", "tenant-requests", "tenant-readings"). */
  policy: string;
  /** The limit that decided, per second (a quota: per period). */
  limit: number;
  /** The window `limit` counts over, in seconds (RateLimit-Policy's w): 1, or a quota period's length. */
  windowSeconds?: number;
  remaining: number;
  retryAfterSeconds: number;
}

/** Headers a browser may read on a tenant-scoped answer. */
export const EXPOSED_HEADERS =
  'Retry-After, X-RateLimit-Scope, X-RateLimit-Limit, RateLimit-Policy, RateLimit, X-Request-ID';

/**
 * Tenant-scoped answers are readable cross-origin, so a browser sender can see why it was limited. IP-scoped
 * refusals happen before anything is known of the tenant, so they get no CORS grant (as OpenRUM does).
 * No credentials are ever sent to this endpoint, so a wildcard origin gives nothing away.
 */
export function addTenantCors(headers: HeaderPairs): void {
  headers.push('Access-Control-Allow-Origin', '*', 'Access-Control-Expose-Headers', EXPOSED_HEADERS);
}

export function addRateLimitHeaders(headers: HeaderPairs, verdict: RateLimitVerdict): void {
  const retryAfterSeconds = Math.max(1, Math.ceil(verdict.retryAfterSeconds));
  const remaining = Math.max(0, Math.floor(verdict.remaining));
  headers.push(
    'Retry-After',
    String(retryAfterSeconds),
    'X-RateLimit-Scope',
    verdict.scope,
    'X-RateLimit-Limit',
    String(verdict.limit),
    'RateLimit-Policy',
    verdict.windowSeconds === undefined ? policyField(verdict.policy, verdict.limit) : `"${verdict.policy}";q=${verdict.limit};w=${verdict.windowSeconds}`,
    'RateLimit',
    rateLimitField(verdict.policy, remaining, retryAfterSeconds),
  );
}

// The fields last written, kept: refusals come in floods that name the same policy, limit and wait again and
// again, and each field built anew is a string joined from pieces.
let lastPolicy = { policy: '', limit: Number.NaN, field: '' };
let lastRateLimit = { policy: '', remaining: Number.NaN, retryAfterSeconds: Number.NaN, field: '' };

function policyField(policy: string, limit: number): string {
  const last = lastPolicy;
  if (last.policy === policy && last.limit === limit) return last.field;
  const field = `"${policy}";q=${limit};w=1`;
  lastPolicy = { policy, limit, field };
  return field;
}

function rateLimitField(policy: string, remaining: number, retryAfterSeconds: number): string {
  const last = lastRateLimit;
  if (last.policy === policy && last.remaining === remaining && last.retryAfterSeconds === retryAfterSeconds) return last.field;
  const field = `"${policy}";r=${remaining};t=${retryAfterSeconds}`;
  lastRateLimit = { policy, remaining, retryAfterSeconds, field };
  return field;
}

/**
 * One limit a request was charged on and admitted by, for the fields of its admitted answer: the door keeps
 * the numbers of its own (the Governor's decision record is overwritten by the next charge).
 */
export interface Quota {
  policy: string;
  /** Per second. */
  limit: number;
  remaining: number;
  /** The most the bucket holds. */
  burst: number;
}

/** Whole seconds until a token bucket with `remaining` of `burst` is full again at `limit` per second. */
export function quotaResetSeconds(limit: number, remaining: number, burst: number): number {
  if (!(limit > 0) || !(burst > remaining)) return 0;
  return Math.min(MAX_RESET_SECONDS, Math.ceil((burst - remaining) / limit));
}

// Rates are at least LIMIT_MIN (1 per second) and bursts at most 1,000,000: a day bounds any reset.
const MAX_RESET_SECONDS = 86_400;

/**
 * RateLimit-Policy and RateLimit for an admitted answer, with an item per quota (a second is optional):
 *   RateLimit-Policy: "tenant-messages";q=5;w=1, "tenant-readings";q=5;w=1
 *   RateLimit: "tenant-messages";r=9;t=1, "tenant-readings";r=7;t=1
 * Every 202 takes this path, so the fields are made once per distinct set of values and kept (below): a
 * flood of one tenant repeats the same few.
 */
export function addQuotaHeaders(headers: HeaderPairs, first: Quota, second: Quota | null): void {
  headers.push('RateLimit-Policy', quotaPolicyField(first, second), 'RateLimit', quotaField(first, second));
}

// The policy field last written, kept: it changes only with the tenant's limits.
let lastQuotaPolicy = { first: '', firstLimit: Number.NaN, second: '', secondLimit: Number.NaN, field: '' };

function quotaPolicyField(first: Quota, second: Quota | null): string {
  const last = lastQuotaPolicy;
  const secondPolicy = second === null ? '' : second.policy;
  const secondLimit = second === null ? 0 : second.limit;
  if (last.first === first.policy && last.firstLimit === first.limit && last.second === secondPolicy && last.secondLimit === secondLimit) return last.field;
  let field = `"${first.policy}";q=${first.limit};w=1`;
  if (second !== null) field += `, "${second.policy}";q=${second.limit};w=1`;
  lastQuotaPolicy = { first: first.policy, firstLimit: first.limit, second: secondPolicy, secondLimit, field };
  return field;
}

// The RateLimit fields made so far, direct-mapped by their four numbers (remaining and reset of each quota):
// a slot holds the policies, the numbers and the field. Policy names are the doors' constants, compared by
// identity. QUOTA_SLOTS fields of some 60 characters: about 100 KB at most.
const QUOTA_SLOTS = 1024;
const quotaNumbers = new Float64Array(QUOTA_SLOTS * 4).fill(Number.NaN);
const quotaFirstPolicies = new Array<string>(QUOTA_SLOTS).fill('');
const quotaSecondPolicies = new Array<string>(QUOTA_SLOTS).fill('');
const quotaFields = new Array<string>(QUOTA_SLOTS).fill('');

function quotaField(first: Quota, second: Quota | null): string {
  const firstRemaining = Math.max(0, Math.floor(first.remaining));
  const firstReset = quotaResetSeconds(first.limit, first.remaining, first.burst);
  const secondPolicy = second === null ? '' : second.policy;
  const secondRemaining = second === null ? 0 : Math.max(0, Math.floor(second.remaining));
  const secondReset = second === null ? 0 : quotaResetSeconds(second.limit, second.remaining, second.burst);
  const slot = (firstRemaining * 31 + firstReset * 7 + secondRemaining * 131 + secondReset) % QUOTA_SLOTS;
  const at = slot * 4;
  if (
    quotaNumbers[at] === firstRemaining &&
    quotaNumbers[at + 1] === firstReset &&
    quotaNumbers[at + 2] === secondRemaining &&
    quotaNumbers[at + 3] === secondReset &&
    quotaFirstPolicies[slot] === first.policy &&
    quotaSecondPolicies[slot] === secondPolicy
  ) {
    return quotaFields[slot]!;
  }
  let field = `"${first.policy}";r=${firstRemaining};t=${firstReset}`;
  if (second !== null) field += `, "${second.policy}";r=${secondRemaining};t=${secondReset}`;
  quotaNumbers[at] = firstRemaining;
  quotaNumbers[at + 1] = firstReset;
  quotaNumbers[at + 2] = secondRemaining;
  quotaNumbers[at + 3] = secondReset;
  quotaFirstPolicies[slot] = first.policy;
  quotaSecondPolicies[slot] = secondPolicy;
  quotaFields[slot] = field;
  return field;
}
