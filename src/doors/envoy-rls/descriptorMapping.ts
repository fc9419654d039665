// How a ShouldRateLimit request maps onto the Governor's admissions (docs/envoy-rls.md for the wire format).
//
// Default mapping (each part configurable, see readDescriptorMapping): domain `devicechain`; in each descriptor
// the entry `tenant` names the tenant, `dimension` the dimension (API_REQUESTS when absent), `allowance` the
// allowance (INGEST and EGRESS need one), `caller` the key hashed for STABLE_DOWNSAMPLE. Other entries are
// ignored (gateways add generic_key, remote_address, paths...). `hits_addend` is the units (0 means 1). A
// descriptor's `limit` override is ignored: limits are configuration, never client input.
//
// The rule for what names no tenant: a descriptor without the tenant entry, and every descriptor of a domain
// that is not configured, is metered on one shared allowance named `(unmapped)` at the platform default of its
// dimension (the default dimension for another domain, whose entries mean something else). Never unlimited,
// and its decisions are recorded like a tenant's, as admissions of an unknown tenant.
//
// Malformed, answered INVALID_ARGUMENT (and nothing is admitted): no descriptors or more than MAX_DESCRIPTORS,
// a descriptor without entries or with more than MAX_ENTRIES_PER_DESCRIPTOR, an entry without a key, a
// dimension or allowance this service does not meter, a tenant value that could never be a tenant ID, a caller
// value over 256 characters, a `hits_addend` over MAX_HITS_ADDEND. Every bound is checked before anything is
// admitted, so one call costs at most MAX_DESCRIPTORS admissions.
import { ALLOWANCES, DIMENSIONS, ID_PATTERN, LIMIT_MAX, slotIndexOf, SLOTS } from '../../governance/index.ts';
import type { Allowance, Dimension } from '../../governance/index.ts';

/** Dimensions the Governor meters by admit (UNDELIVERED_COMMANDS is a count ceiling kept by the command backlog). */
const ADMITTED_DIMENSIONS: readonly Dimension[] = DIMENSIONS.filter((dimension) => SLOTS.some((slot) => slot.dimension === dimension));

export interface DescriptorMapping {
  /** The domain whose descriptors name tenants. */
  domain: string;
  /** The entry key that carries each part. */
  keys: { tenant: string; dimension: string; allowance: string; caller: string };
  /** The dimension of a descriptor without a dimension entry. */
  defaultDimension: Dimension;
}

export const DEFAULT_DESCRIPTOR_MAPPING: DescriptorMapping = {
  domain: 'devicechain',
  keys: { tenant: 'tenant', dimension: 'dimension', allowance: 'allowance', caller: 'caller' },
  defaultDimension: 'API_REQUESTS',
};

/** The one allowance every descriptor naming no tenant is metered on (no tenant ID can contain parentheses). */
export const UNMAPPED_TENANT = '(unmapped)';
const MAX_CALLER_LENGTH = 256;
/** Descriptors in one request: gateways send a handful (one per rate limit action of a route). */
export const MAX_DESCRIPTORS = 64;
/** Entries in one descriptor: a few keys each (tenant, dimension, generic_key, remote_address, a header...). */
export const MAX_ENTRIES_PER_DESCRIPTOR = 32;
/**
 * The largest `hits_addend`: the largest rate or burst a limit can be configured with (LIMIT_MAX). A count up to
 * it that is larger than the limit that decides is refused OVER_LIMIT as never-fits; a larger one could never
 * fit any configuration and is a malformed request (INVALID_ARGUMENT, nothing recorded).
 */
export const MAX_HITS_ADDEND = LIMIT_MAX;

/** The request as the proto loader decodes it (keepCase, defaults off: absent fields are undefined). */
export interface RateLimitRequestMessage {
  domain?: string;
  descriptors?: { entries?: { key?: string; value?: string }[] | null; limit?: unknown }[] | null;
  hits_addend?: number;
}

export interface MappedDescriptor {
  tenant: string;
  dimension: Dimension;
  allowance: Allowance | null;
  callerKey: string | undefined;
}

export class MalformedRateLimitRequest extends Error {
  override readonly name = 'MalformedRateLimitRequest';
}

/** The admissions a request asks for, one per descriptor in order; throws MalformedRateLimitRequest. */
export function mapDescriptors(request: RateLimitRequestMessage, mapping: DescriptorMapping): MappedDescriptor[] {
  const descriptors = request.descriptors ?? [];
  if (descriptors.length === 0) throw new MalformedRateLimitRequest('a request needs at least one descriptor');
  if (descriptors.length > MAX_DESCRIPTORS) {
    throw new MalformedRateLimitRequest(`a request has at most ${MAX_DESCRIPTORS} descriptors, not ${descriptors.length}`);
  }
  const ours = (request.domain ?? '') === mapping.domain;
  const keys = mapping.keys;
  return descriptors.map((descriptor, index) => {
    const entries = descriptor?.entries ?? [];
    if (entries.length === 0) throw new MalformedRateLimitRequest(`descriptor ${index} has no entries`);
    if (entries.length > MAX_ENTRIES_PER_DESCRIPTOR) {
      throw new MalformedRateLimitRequest(`descriptor ${index} has more than ${MAX_ENTRIES_PER_DESCRIPTOR} entries`);
    }
    let tenant: string | undefined;
    let dimensionText: string | undefined;
    let allowanceText: string | undefined;
    let callerKey: string | undefined;
    for (const entry of entries) {
      const key = entry?.key ?? '';
      if (key === '') throw new MalformedRateLimitRequest(`descriptor ${index} has an entry without a key`);
      if (!ours) continue;
      const value = entry.value ?? '';
      if (key === keys.tenant) tenant = value;
      else if (key === keys.dimension) dimensionText = value;
      else if (key === keys.allowance) allowanceText = value;
      else if (key === keys.caller) callerKey = value;
    }
    if (tenant !== undefined && !ID_PATTERN.test(tenant)) {
      throw new MalformedRateLimitRequest(`descriptor ${index}: ${JSON.stringify(tenant)} is not a tenant ID`);
    }
    const dimension = dimensionText ?? mapping.defaultDimension;
    if (!(ADMITTED_DIMENSIONS as readonly string[]).includes(dimension)) {
      throw new MalformedRateLimitRequest(`descriptor ${index}: dimension must be one of ${ADMITTED_DIMENSIONS.join(', ')}`);
    }
    if (allowanceText !== undefined && !(ALLOWANCES as readonly string[]).includes(allowanceText)) {
      throw new MalformedRateLimitRequest(`descriptor ${index}: allowance must be one of ${ALLOWANCES.join(', ')}`);
    }
    const allowance = (allowanceText ?? null) as Allowance | null;
    if (slotIndexOf(dimension as Dimension, allowance) < 0) {
      throw new MalformedRateLimitRequest(`descriptor ${index}: ${dimension} is not metered with allowance ${String(allowance)}`);
    }
    if (callerKey !== undefined && callerKey.length > MAX_CALLER_LENGTH) {
      throw new MalformedRateLimitRequest(`descriptor ${index}: caller is longer than ${MAX_CALLER_LENGTH} characters`);
    }
    return { tenant: tenant ?? UNMAPPED_TENANT, dimension: dimension as Dimension, allowance, callerKey };
  });
}

/** The units a request adds: `hits_addend`, 0 or unset meaning 1; over MAX_HITS_ADDEND throws MalformedRateLimitRequest. */
export function unitsOf(request: RateLimitRequestMessage): number {
  const hits = request.hits_addend;
  if (hits === undefined || hits === 0) return 1;
  // The proto's uint32 decodes to a whole number from 0 to 2^32 - 1; checked whole anyway, as nothing else is trusted.
  if (!Number.isInteger(hits) || hits < 0 || hits > MAX_HITS_ADDEND) {
    throw new MalformedRateLimitRequest(`hits_addend must be a whole number from 0 to ${MAX_HITS_ADDEND}, not ${hits}`);
  }
  return hits;
}

/**
 * The mapping from settings: GOVERNANCE_RLS_DOMAIN, GOVERNANCE_RLS_DEFAULT_DIMENSION and
 * GOVERNANCE_RLS_DESCRIPTOR_KEYS (`part=key` pairs, e.g. `tenant=tenant_id,caller=remote_address`).
 * A bad value stops the service at start, naming the variable.
 */
export function readDescriptorMapping(env: NodeJS.ProcessEnv = process.env): DescriptorMapping {
  const mapping: DescriptorMapping = { ...DEFAULT_DESCRIPTOR_MAPPING, keys: { ...DEFAULT_DESCRIPTOR_MAPPING.keys } };
  const domain = env.GOVERNANCE_RLS_DOMAIN?.trim();
  if (domain) mapping.domain = domain;
  const dimension = env.GOVERNANCE_RLS_DEFAULT_DIMENSION?.trim();
  if (dimension) {
    if (!(DIMENSIONS as readonly string[]).includes(dimension) || !(ADMITTED_DIMENSIONS as readonly string[]).includes(dimension)) {
      throw new Error(`GOVERNANCE_RLS_DEFAULT_DIMENSION must be one of ${ADMITTED_DIMENSIONS.join(', ')}, not "${dimension}"`);
    }
    mapping.defaultDimension = dimension as Dimension;
  }
  const pairs = env.GOVERNANCE_RLS_DESCRIPTOR_KEYS?.trim();
  if (pairs) {
    for (const pair of pairs.split(',')) {
      const [part, key] = pair.split('=').map((each) => each.trim());
      if (!part || !key || !(part in mapping.keys)) {
        throw new Error(`GOVERNANCE_RLS_DESCRIPTOR_KEYS takes part=key pairs, parts tenant, dimension, allowance, caller; not "${pair}"`);
      }
      mapping.keys[part as keyof DescriptorMapping['keys']] = key;
    }
    if (new Set(Object.values(mapping.keys)).size !== 4) throw new Error('GOVERNANCE_RLS_DESCRIPTOR_KEYS: each part needs a key of its own');
  }
  return mapping;
}
