// The dimension catalog as data (docs/governance-model.md, "Dimensions"). Adding a dimension is one entry here plus
// its name in types.ts; the cascade, validation and the Governor read everything else from this table.
import type { Allowance, Dimension, LimitValue, OverLimitBehaviour } from './types.ts';

export type LimiterKind = 'TOKEN_BUCKET' | 'FIXED_WINDOW' | 'COUNT_CEILING';

export interface DimensionSpec {
  dimension: Dimension;
  kind: LimiterKind;
  /** What one unit of the limit counts. */
  unit: 'readings' | 'actions' | 'requests' | 'registrations' | 'commands';
  shippedDefault: LimitValue;
  /** Separate allowances the ceiling applies to; empty when the dimension has a single one. */
  allowances: readonly Allowance[];
  /** Allowances whose messages are also charged once per message before decoding (HTTP, MQTT, LwM2M). */
  messageChargedAllowances: readonly Allowance[];
  overLimit: OverLimitBehaviour;
  /** Allowances whose over-limit behaviour differs from `overLimit`. */
  overLimitByAllowance: Partial<Record<Allowance, OverLimitBehaviour>>;
}

/** Every stored rate and ceiling is an integer in this range (docs/governance-model.md, the fail-safe rule). */
export const LIMIT_MIN = 1;
export const LIMIT_MAX = 1_000_000;

export const DIMENSION_CATALOG: Readonly<Record<Dimension, DimensionSpec>> = {
  INGEST: {
    dimension: 'INGEST',
    kind: 'TOKEN_BUCKET',
    unit: 'readings',
    shippedDefault: { ratePerSecond: 1000, burst: 2000 },
    allowances: ['LIVE', 'BACKLOG', 'HTTP', 'INTEGRATIONS', 'LWM2M', 'SPARKPLUG'],
    // MQTT traffic is LIVE (or BACKLOG when it drains from the platform broker); Sparkplug and integrations
    // are charged by readings only.
    messageChargedAllowances: ['LIVE', 'BACKLOG', 'HTTP', 'LWM2M'],
    overLimit: 'SHED',
    overLimitByAllowance: { HTTP: 'REJECT', INTEGRATIONS: 'DROP_ACCEPTED' },
  },
  EGRESS: {
    dimension: 'EGRESS',
    kind: 'TOKEN_BUCKET',
    unit: 'actions',
    shippedDefault: { ratePerSecond: 100, burst: 200 },
    allowances: ['DETECTION', 'CONNECTORS'],
    messageChargedAllowances: [],
    overLimit: 'SHED',
    overLimitByAllowance: {},
  },
  AI_INFERENCE: {
    dimension: 'AI_INFERENCE',
    kind: 'TOKEN_BUCKET',
    unit: 'requests',
    shippedDefault: { ratePerSecond: 5, burst: 10 },
    allowances: [],
    messageChargedAllowances: [],
    overLimit: 'REJECT',
    overLimitByAllowance: {},
  },
  PROVISIONING: {
    dimension: 'PROVISIONING',
    kind: 'TOKEN_BUCKET',
    unit: 'registrations',
    shippedDefault: { ratePerSecond: 20, burst: 500 },
    allowances: [],
    messageChargedAllowances: [],
    overLimit: 'REJECT',
    overLimitByAllowance: {},
  },
  UNDELIVERED_COMMANDS: {
    dimension: 'UNDELIVERED_COMMANDS',
    kind: 'COUNT_CEILING',
    unit: 'commands',
    shippedDefault: { ceiling: 1000 },
    allowances: [],
    messageChargedAllowances: [],
    // Refused, retryably: a command is a physical actuation and is never dropped.
    overLimit: 'REJECT',
    overLimitByAllowance: {},
  },
  API_REQUESTS: {
    dimension: 'API_REQUESTS',
    kind: 'FIXED_WINDOW',
    unit: 'requests',
    shippedDefault: { ratePerSecond: 5000 },
    allowances: [],
    messageChargedAllowances: [],
    // The tenant's apiOverLimitPolicy may switch this to STABLE_DOWNSAMPLE.
    overLimit: 'REJECT',
    overLimitByAllowance: {},
  },
};

export function isLimitInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= LIMIT_MIN && value <= LIMIT_MAX;
}

export type LimitValidation =
  | { ok: true; value: LimitValue }
  | { ok: false; field: keyof LimitValue | 'value'; message: string };

/** The fields of a rate or ceiling (a quota is checked apart: quotaValue.ts). */
type RateField = Exclude<keyof LimitValue, 'quota'>;

const FIELDS_BY_KIND: Record<LimiterKind, readonly RateField[]> = {
  TOKEN_BUCKET: ['ratePerSecond', 'burst'],
  FIXED_WINDOW: ['ratePerSecond'],
  COUNT_CEILING: ['ceiling'],
};

/**
 * Input validation for a limit an operator or tenant admin sets. The cascade skips exactly what this refuses,
 * so "valid" has one definition. A token bucket's burst may be left out: the cascade derives it from the rate.
 */
export function validateLimitValue(dimension: Dimension, value: unknown): LimitValidation {
  const spec = DIMENSION_CATALOG[dimension];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, field: 'value', message: `${dimension}: a limit is an object` };
  }
  const allowed = FIELDS_BY_KIND[spec.kind];
  const given = value as Record<string, unknown>;
  for (const field of Object.keys(given)) {
    if (given[field] === undefined || given[field] === null) continue;
    if (!(allowed as readonly string[]).includes(field)) {
      return {
        ok: false,
        field: field as keyof LimitValue,
        message: `${dimension} is limited by ${allowed.join(' and ')}; ${field} does not apply`,
      };
    }
  }
  const required = allowed[0]!;
  const out: LimitValue = {};
  for (const field of allowed) {
    const raw = given[field];
    if (raw === undefined || raw === null) {
      if (field === required) return { ok: false, field, message: `${dimension}: ${field} is required` };
      continue;
    }
    if (!isLimitInteger(raw)) {
      return {
        ok: false,
        field,
        message: `${dimension}: ${field} must be a whole number from ${LIMIT_MIN} to ${LIMIT_MAX.toLocaleString('en-US')}`,
      };
    }
    out[field] = raw;
  }
  return { ok: true, value: out };
}
