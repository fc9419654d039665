// The 429 contract (docs/governance-model.md): Retry-After in whole seconds (at least 1) from the limiter, X-RateLimit-Scope,
// X-RateLimit-Limit, and the IETF fields in the structured-field form of draft-ietf-httpapi-ratelimit-headers-10
// (the form the draft has kept since -08):
//   RateLimit-Policy: "tenant-readings";q=1000;w=1
//   RateLimit: "tenant-readings";r=0;t=1
// Every limit here is a rate per second, so each policy's window w is 1 and q is the per-second limit.
import type { HeaderPairs } from './respond.ts';

export type RateLimitScope = 'ip' | 'tenant';

export interface RateLimitVerdict {
  scope: RateLimitScope;
  /** The policy name in RateLimit-Policy: which limit decided ("ip", "tenant-requests", "tenant-readings"). */
  policy: string;
  /** The limit that decided, per second. */
  limit: number;
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
    policyField(verdict.policy, verdict.limit),
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
