// Input checks shared by every command. Each returns a ControlPlaneError (a value, nothing is appended) or the
// checked value. Limit values are checked by the governance library's validateLimitValue, the same
// definition of "valid" the cascade uses when it skips a stored level.
import type { Branding } from '../ledger/index.ts';
import { DIMENSIONS, ID_PATTERN, validateLimitValue, validateQuota } from '../governance/index.ts';
import type { Dimension, LimitValue, OverLimitPolicy } from '../governance/index.ts';
import { controlPlaneError, type ControlPlaneError } from './controlPlaneCommand.ts';
import { textProblem } from '../db/storableValues.ts';

export const REASON_MAX_CHARS = 2_000;
const MODEL_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/;
const COLOR_PATTERN = /^#[0-9a-fA-F]{6}$/;
const PRODUCT_NAME_MAX_CHARS = 100;
const URL_MAX_CHARS = 2_048;
const OVER_LIMIT_POLICIES: readonly OverLimitPolicy[] = ['EXACT_REJECT', 'STABLE_DOWNSAMPLE'];

/** The limit fields a command input may carry; absent and null mean "not given". */
export interface LimitInput {
  ratePerSecond?: number | null;
  burst?: number | null;
  ceiling?: number | null;
  /**
   * A period quota beside the rate (`{ period, limit, resetDay, timeZone }`); absent, null or a limit of 0: none
   * at this level. Given alone, the level sets only the quota and its rate falls through the cascade.
   */
  quota?: unknown;
}

export function isControlPlaneError(value: unknown): value is ControlPlaneError {
  return typeof value === 'object' && value !== null && typeof (value as ControlPlaneError).kind === 'string' && 'message' in value;
}

/** Tenant and tier ids name streams and URLs: a short, plain identifier. */
export function checkId(field: 'tenantId' | 'tierId', value: unknown): ControlPlaneError | undefined {
  if (typeof value === 'string' && ID_PATTERN.test(value)) return undefined;
  return controlPlaneError('InvalidInput', `${field} must be 1 to 64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit`, field);
}

export function checkDimension(value: unknown): Dimension | ControlPlaneError {
  if (typeof value === 'string' && (DIMENSIONS as readonly string[]).includes(value)) return value as Dimension;
  return controlPlaneError('UnknownDimension', `unknown dimension ${JSON.stringify(value)}; known: ${DIMENSIONS.join(', ')}`, 'dimension');
}

export function checkLimit(dimension: Dimension, input: LimitInput): LimitValue | ControlPlaneError {
  const quota = validateQuota(dimension, input.quota);
  if (!quota.ok) return controlPlaneError('InvalidLimit', quota.message, quota.field);
  const rateGiven = [input.ratePerSecond, input.burst, input.ceiling].some((field) => field !== undefined && field !== null);
  if (quota.value !== null && !rateGiven) return { quota: quota.value };
  const checked = validateLimitValue(dimension, { ratePerSecond: input.ratePerSecond, burst: input.burst, ceiling: input.ceiling });
  if (!checked.ok) return controlPlaneError('InvalidLimit', checked.message, checked.field);
  return quota.value === null ? checked.value : { ...checked.value, quota: quota.value };
}

/** A reason, trimmed; undefined when an optional one is not given. */
export function checkReason(value: unknown, required: boolean): string | undefined | ControlPlaneError {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    return required ? controlPlaneError('InvalidInput', 'a reason is required', 'reason') : undefined;
  }
  if (typeof value !== 'string') return controlPlaneError('InvalidInput', 'the reason must be text', 'reason');
  const unstorable = textProblem(value, 'the reason');
  if (unstorable) return controlPlaneError('InvalidInput', unstorable, 'reason');
  const reason = value.trim();
  if (reason.length > REASON_MAX_CHARS) {
    return controlPlaneError('InvalidInput', `the reason is ${reason.length} characters; at most ${REASON_MAX_CHARS} are kept`, 'reason');
  }
  return reason;
}

/** A limit set at one level (platform, tier or tenant override): dimension, value, then reason, in that order. */
export function checkLimitChange(
  input: LimitInput & { dimension: unknown; reason?: unknown },
  reasonRequired: boolean,
): { dimension: Dimension; value: LimitValue; reason: string | undefined } | ControlPlaneError {
  const dimension = checkDimension(input.dimension);
  if (isControlPlaneError(dimension)) return dimension;
  const value = checkLimit(dimension, input);
  if (isControlPlaneError(value)) return value;
  const reason = checkReason(input.reason, reasonRequired);
  if (isControlPlaneError(reason)) return reason;
  return { dimension, value, reason };
}

/** A limit cleared at one level (tier limit or tenant override): dimension, then reason. */
export function checkLimitClearing(
  input: { dimension: unknown; reason?: unknown },
  reasonRequired: boolean,
): { dimension: Dimension; reason: string | undefined } | ControlPlaneError {
  const dimension = checkDimension(input.dimension);
  if (isControlPlaneError(dimension)) return dimension;
  const reason = checkReason(input.reason, reasonRequired);
  if (isControlPlaneError(reason)) return reason;
  return { dimension, reason };
}

/** An optional instant after which an override stops applying; it must lie in the future. */
export function checkExpiresAt(value: unknown, now: Date): string | null | ControlPlaneError {
  if (value === undefined || value === null) return null;
  const instant = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : undefined;
  if (!instant || Number.isNaN(instant.getTime())) {
    return controlPlaneError('InvalidInput', 'expiresAt must be an ISO 8601 date-time', 'expiresAt');
  }
  if (instant.getTime() <= now.getTime()) {
    return controlPlaneError('InvalidInput', `expiresAt ${instant.toISOString()} is not in the future (now ${now.toISOString()})`, 'expiresAt');
  }
  return instant.toISOString();
}

/** An AI model name, or null to clear an assignment. */
export function checkModel(value: unknown): string | null | ControlPlaneError {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' && MODEL_PATTERN.test(value)) return value;
  return controlPlaneError('InvalidInput', "model must be 1 to 128 letters, digits or '._:/@-', starting with a letter or digit", 'model');
}

export function checkOverLimitPolicy(value: unknown): OverLimitPolicy | ControlPlaneError {
  if (typeof value === 'string' && (OVER_LIMIT_POLICIES as readonly string[]).includes(value)) return value as OverLimitPolicy;
  return controlPlaneError('InvalidInput', `policy must be one of ${OVER_LIMIT_POLICIES.join(', ')}`, 'policy');
}

export function checkBranding(value: unknown): Branding | ControlPlaneError {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return controlPlaneError('InvalidInput', 'branding must be an object', 'branding');
  }
  const given = value as Record<string, unknown>;
  const known = ['productName', 'logoUrl', 'primaryColor'];
  const unknownField = Object.keys(given).find((key) => !known.includes(key) && given[key] !== undefined && given[key] !== null);
  if (unknownField) return controlPlaneError('InvalidInput', `branding has no field ${unknownField}`, `branding.${unknownField}`);
  const { productName, logoUrl, primaryColor } = given;
  if (typeof productName !== 'string' || productName.trim() === '' || productName.length > PRODUCT_NAME_MAX_CHARS) {
    return controlPlaneError('InvalidInput', `productName must be 1 to ${PRODUCT_NAME_MAX_CHARS} characters`, 'branding.productName');
  }
  const unstorable = textProblem(productName, 'productName');
  if (unstorable) return controlPlaneError('InvalidInput', unstorable, 'branding.productName');
  const branding: Branding = { productName: productName.trim() };
  if (logoUrl !== undefined && logoUrl !== null) {
    const normalised = typeof logoUrl === 'string' && logoUrl.length <= URL_MAX_CHARS ? normalisedLogoUrl(logoUrl) : undefined;
    if (normalised === undefined) {
      return controlPlaneError('InvalidInput', 'logoUrl must be an https URL without credentials, at most 2048 characters', 'branding.logoUrl');
    }
    branding.logoUrl = normalised;
  }
  if (primaryColor !== undefined && primaryColor !== null) {
    if (typeof primaryColor !== 'string' || !COLOR_PATTERN.test(primaryColor)) {
      return controlPlaneError('InvalidInput', 'primaryColor must be #rrggbb', 'branding.primaryColor');
    }
    branding.primaryColor = primaryColor.toLowerCase();
  }
  return branding;
}

// The URL as the WHATWG parser serialises it, which is what is stored and handed to browsers: quotes,
// spaces and angle brackets come out percent-encoded, so a stored logoUrl cannot break out of an attribute.
// https only (a logo fetched over http is mixed content); user:password@ is refused, not stripped, since
// credentials in a URL every tenant's users load would leak them.
function normalisedLogoUrl(text: string): string | undefined {
  if (textProblem(text, 'logoUrl')) return undefined;
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' || url.hostname === '' || url.username !== '' || url.password !== '') return undefined;
  return url.href.length <= URL_MAX_CHARS ? url.href : undefined;
}
