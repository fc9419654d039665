// One item of an admission batch, checked field by field before the Governor sees it. The Governor throws
// InvalidAdmission on what it cannot meter (a programming fault in an in-process caller); a remote caller's
// bad item is an answer instead: the field and the reason, and the other items of the batch are still decided.
import { ALLOWANCES, DIMENSIONS, ID_PATTERN, slotIndexOf, SLOTS } from '../../governance/index.ts';
import type { AdmitRequest, Allowance, Dimension } from '../../governance/index.ts';
import { SEND_TIME_MAX_AGE_MS, SEND_TIME_MAX_AHEAD_MS, sendTimeOutOfWindow } from '../pipeline/index.ts';

export interface ItemError {
  field: string;
  reason: string;
}

/**
 * How far ahead of and back from the service's clock `at` may be: the window every client time is held to
 * (../pipeline/sendTimeWindow.ts: 60 s ahead, 7 days back). Outside it an item is refused, not metered.
 */
export const MAX_AT_AHEAD_MS = SEND_TIME_MAX_AHEAD_MS;
export const MAX_AT_AGE_MS = SEND_TIME_MAX_AGE_MS;
/**
 * Units of one item: a whole weighted cost (a half reading is not a thing, and a fraction would be tallied as
 * fractional units), bounded so a typo cannot overflow a counter. More than the allowance's burst is decided
 * by the Governor: never fits, never granted.
 */
export const MAX_UNITS = 1_000_000_000;
export const MAX_CALLER_KEY_LENGTH = 256;

/** Dimensions the Governor meters by admit (UNDELIVERED_COMMANDS is a count ceiling kept by the command backlog). */
export const ADMITTED_DIMENSIONS: readonly Dimension[] = DIMENSIONS.filter((dimension) => SLOTS.some((slot) => slot.dimension === dimension));

/**
 * Checks one item and fills `into` (reused across a batch, so a batch of 1,000 makes no request objects).
 * Returns null when it is admissible, else what is wrong with it.
 */
export function readAdmissionItem(raw: unknown, nowMs: number, into: AdmitRequest): ItemError | null {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { field: '', reason: 'an item is a JSON object' };
  const item = raw as Record<string, unknown>;
  const tenantId = item.tenantId;
  if (typeof tenantId !== 'string' || !ID_PATTERN.test(tenantId)) {
    return { field: 'tenantId', reason: 'a tenant ID: a letter or digit, then up to 63 letters, digits, _ . : or -' };
  }
  const dimension = item.dimension;
  if (typeof dimension !== 'string' || !(ADMITTED_DIMENSIONS as readonly string[]).includes(dimension)) {
    return { field: 'dimension', reason: `one of ${ADMITTED_DIMENSIONS.join(', ')}` };
  }
  const allowance = item.allowance ?? null;
  if (allowance !== null && (typeof allowance !== 'string' || !(ALLOWANCES as readonly string[]).includes(allowance))) {
    return { field: 'allowance', reason: `one of ${ALLOWANCES.join(', ')}, or absent` };
  }
  const slotIndex = slotIndexOf(dimension as Dimension, allowance as Allowance | null);
  if (slotIndex < 0) return { field: 'allowance', reason: allowanceHelp(dimension as Dimension) };
  const units = item.units;
  if (typeof units !== 'number' || !Number.isInteger(units) || units < 0 || units > MAX_UNITS) {
    return { field: 'units', reason: `a whole number from 0 to ${MAX_UNITS}` };
  }
  let at = nowMs;
  if (item.at !== undefined && item.at !== null) {
    const given = instantOf(item.at);
    if (given === null) return { field: 'at', reason: 'Unix milliseconds or an RFC 3339 date-time' };
    const outOfWindow = sendTimeOutOfWindow(given, nowMs);
    if (outOfWindow === 'future') return { field: 'at', reason: `more than ${MAX_AT_AHEAD_MS / 1000} s in the future` };
    if (outOfWindow === 'too-old') return { field: 'at', reason: `more than ${MAX_AT_AGE_MS / 86_400_000} days in the past` };
    at = given;
  }
  const callerKey = item.callerKey ?? undefined;
  if (callerKey !== undefined && (typeof callerKey !== 'string' || callerKey.length > MAX_CALLER_KEY_LENGTH)) {
    return { field: 'callerKey', reason: `a string of at most ${MAX_CALLER_KEY_LENGTH} characters` };
  }
  const charge = item.charge ?? 'readings';
  if (charge !== 'readings' && charge !== 'message') return { field: 'charge', reason: 'readings or message' };
  if (charge === 'message' && !SLOTS[slotIndex]!.messageCharged) {
    return { field: 'charge', reason: `${dimension}/${String(allowance)} is not charged per message` };
  }
  into.tenant = tenantId;
  into.dimension = dimension as Dimension;
  into.allowance = allowance as Allowance | null;
  into.units = units;
  into.at = at;
  into.callerKey = callerKey;
  into.charge = charge;
  return null;
}

function instantOf(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  // Date.parse accepts more than RFC 3339; the pattern keeps the accepted form unambiguous (a zone is required).
  if (typeof value === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i.test(value)) {
    const ms = Date.parse(value);
    return Number.isFinite(ms) ? ms : null;
  }
  return null;
}

function allowanceHelp(dimension: Dimension): string {
  const allowances = SLOTS.filter((slot) => slot.dimension === dimension).map((slot) => slot.allowance);
  return allowances[0] === null ? `${dimension} has no allowances: leave it out` : `${dimension} needs one of ${allowances.join(', ')}`;
}
