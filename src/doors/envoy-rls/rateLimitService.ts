// ShouldRateLimit decided by the Governor: each descriptor is one admission at the request's arrival, all of
// them must pass. What the gateway gets back: per descriptor the limit that decided (per SECOND, named by the
// 429 contract's policy name), what remains, and when refused the seconds until it would fit; on OVER_LIMIT the
// 429 contract's headers for the gateway to add to its 429 (Retry-After, X-RateLimit-Scope/Limit,
// RateLimit-Policy/RateLimit, the same as the service's own HTTP doors send).
//
// Every descriptor is charged, in order, even after one is refused, as Envoy's reference service does: each
// limit counts what was offered to it, and the ledger records each refusal under its own tenant.
import { DIMENSION_CATALOG } from '../../governance/index.ts';
import type { AdmitDecision, AdmitRequest, Governor } from '../../governance/index.ts';
import { addRateLimitHeaders } from '../../http-server/rateLimitHeaders.ts';
import { mapDescriptors, UNMAPPED_TENANT, unitsOf, type DescriptorMapping, type RateLimitRequestMessage } from './descriptorMapping.ts';

export type RlsCode = 'OK' | 'OVER_LIMIT';

export interface DescriptorStatusMessage {
  code: RlsCode;
  current_limit: { requests_per_unit: number; unit: 'SECOND' | 'DAY' | 'MONTH'; name: string };
  limit_remaining: number;
  duration_until_reset?: { seconds: number; nanos: number };
}

export interface RateLimitResponseMessage {
  overall_code: RlsCode;
  statuses: DescriptorStatusMessage[];
  response_headers_to_add: { key: string; value: string }[];
}

export interface RateLimitDecider {
  /** Throws MalformedRateLimitRequest for a request that cannot be decided (INVALID_ARGUMENT). */
  shouldRateLimit(request: RateLimitRequestMessage): RateLimitResponseMessage;
}

const MAX_UINT32 = 4_294_967_295;

export function createRateLimitDecider(governor: Governor, mapping: DescriptorMapping, now: () => number = Date.now): RateLimitDecider {
  const request: AdmitRequest = { tenant: '', dimension: 'API_REQUESTS', allowance: null, units: 1, at: 0, callerKey: undefined, untrustedName: true };
  return {
    shouldRateLimit(message) {
      const descriptors = mapDescriptors(message, mapping);
      request.units = unitsOf(message);
      request.at = now();
      let overall: RlsCode = 'OK';
      let refusal: { decision: AdmitDecision; policy: string } | null = null;
      const statuses = descriptors.map((descriptor): DescriptorStatusMessage => {
        request.tenant = descriptor.tenant;
        request.dimension = descriptor.dimension;
        request.allowance = descriptor.allowance;
        request.callerKey = descriptor.callerKey;
        // A tenant named in a descriptor is whatever the gateway's client sent: an unconfirmed name gets one of
        // the places for unconfirmed names or the overflow allowance, never state of its own (the (unmapped)
        // allowance is one fixed name).
        request.untrustedName = descriptor.tenant !== UNMAPPED_TENANT;
        const decision = governor.admit(request);
        const quota = decision.quotaExceeded === true;
        const policy = `${quota ? 'quota' : decision.scope === 'overflow' ? 'overflow' : 'tenant'}-${DIMENSION_CATALOG[descriptor.dimension].unit}`;
        const unit = quota ? (decision.quotaPeriod === 'MONTH' ? 'MONTH' : 'DAY') : 'SECOND';
        const status: DescriptorStatusMessage = {
          code: decision.admitted ? 'OK' : 'OVER_LIMIT',
          current_limit: { requests_per_unit: uint32(Math.max(1, Math.floor(decision.limit))), unit, name: policy },
          limit_remaining: uint32(Math.floor(decision.remaining)),
        };
        if (!decision.admitted) {
          status.duration_until_reset = { seconds: Math.max(1, Math.ceil(decision.retryAfterSeconds)), nanos: 0 };
          overall = 'OVER_LIMIT';
          refusal ??= { decision, policy };
        }
        return status;
      });
      const response_headers_to_add: RateLimitResponseMessage['response_headers_to_add'] = [];
      if (refusal !== null) {
        const { decision, policy } = refusal as { decision: AdmitDecision; policy: string };
        const pairs: string[] = [];
        addRateLimitHeaders(pairs, {
          scope: decision.quotaExceeded === true ? 'quota' : 'tenant',
          policy,
          limit: decision.limit,
          remaining: decision.remaining,
          retryAfterSeconds: decision.retryAfterSeconds,
        });
        for (let i = 0; i < pairs.length; i += 2) response_headers_to_add.push({ key: pairs[i]!, value: pairs[i + 1]! });
      }
      return { overall_code: overall, statuses, response_headers_to_add };
    },
  };
}

function uint32(value: number): number {
  return value <= 0 ? 0 : value >= MAX_UINT32 ? MAX_UINT32 : value;
}
