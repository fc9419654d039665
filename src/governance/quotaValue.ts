// A quota over a calendar period (docs/governance-model.md, "Period quotas"): what a level may set beside its
// rate, how it is checked, how it resolves through the cascade, and where its periods begin and end in the
// quota's time zone. Unlike a rate, a quota has no shipped default: missing or zero at every level means no
// quota at all (a rate protects the shared platform, so nothing may resolve to "unlimited"; a quota is what a
// customer bought, and a platform without one is not at risk).
import { resolveCascade, type Resolved } from './cascade.ts';
import { DIMENSION_CATALOG } from './dimensions.ts';
import { QUOTA_PERIODS } from './types.ts';
import type { Dimension, LimitLevels, LimitSourceLevel, QuotaPeriod, QuotaValue, TenantGovernanceRecord } from './types.ts';

/** The most units one period may allow: exact in a double and in Redis' integers. */
export const QUOTA_LIMIT_MAX = 1_000_000_000_000;
/** A month's period starts on this day of the month at most, so every month has it. */
export const RESET_DAY_MAX = 28;
const TIME_ZONE_MAX_CHARS = 64;

export type QuotaCheck = { ok: true; value: QuotaValue | null } | { ok: false; field: string; message: string };

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** The formatter that reads wall-clock fields in `timeZone`, or undefined when the zone is not known. */
function zoneFormat(timeZone: string): Intl.DateTimeFormat | undefined {
  let format = zoneFormats.get(timeZone);
  if (format !== undefined) return format;
  try {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch {
    return undefined;
  }
  // Bounded: zones are checked before they are stored, and there are a few hundred of them.
  if (zoneFormats.size < 1_000) zoneFormats.set(timeZone, format);
  return format;
}

/**
 * Checks a quota as a command gives it. Null or a limit of 0 is "no quota at this level" (it falls through the
 * cascade); anything else must be whole and in range, in a known time zone.
 */
export function validateQuota(dimension: Dimension, raw: unknown): QuotaCheck {
  if (raw === undefined || raw === null) return { ok: true, value: null };
  if (typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, field: 'quota', message: 'quota must be an object' };
  if (DIMENSION_CATALOG[dimension].kind === 'COUNT_CEILING') {
    return { ok: false, field: 'quota', message: `${dimension} is a ceiling on a count, not a rate: it has no period quota` };
  }
  const given = raw as Record<string, unknown>;
  const known = ['period', 'limit', 'resetDay', 'timeZone'];
  const unknownField = Object.keys(given).find((key) => !known.includes(key) && given[key] !== undefined && given[key] !== null);
  if (unknownField) return { ok: false, field: `quota.${unknownField}`, message: `quota has no field ${unknownField}` };
  const { period, limit, resetDay, timeZone } = given;
  if (limit === 0) return { ok: true, value: null };
  if (typeof period !== 'string' || !(QUOTA_PERIODS as readonly string[]).includes(period)) {
    return { ok: false, field: 'quota.period', message: `quota.period must be one of ${QUOTA_PERIODS.join(', ')}` };
  }
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > QUOTA_LIMIT_MAX) {
    return { ok: false, field: 'quota.limit', message: `quota.limit must be a whole number from 0 (no quota) to ${QUOTA_LIMIT_MAX.toLocaleString('en-US')}` };
  }
  let day = 1;
  if (resetDay !== undefined && resetDay !== null) {
    if (typeof resetDay !== 'number' || !Number.isInteger(resetDay) || resetDay < 1 || resetDay > RESET_DAY_MAX) {
      return { ok: false, field: 'quota.resetDay', message: `quota.resetDay must be a whole number from 1 to ${RESET_DAY_MAX}` };
    }
    if (period === 'DAY' && resetDay !== 1) {
      return { ok: false, field: 'quota.resetDay', message: 'quota.resetDay applies to a MONTH period only' };
    }
    day = resetDay;
  }
  let zone = 'UTC';
  if (timeZone !== undefined && timeZone !== null) {
    if (typeof timeZone !== 'string' || timeZone.length > TIME_ZONE_MAX_CHARS || zoneFormat(timeZone) === undefined) {
      return { ok: false, field: 'quota.timeZone', message: 'quota.timeZone must be an IANA time zone, such as Europe/Berlin' };
    }
    zone = zoneFormat(timeZone)!.resolvedOptions().timeZone;
  }
  return { ok: true, value: { period: period as QuotaPeriod, limit, resetDay: day, timeZone: zone } };
}

/** A stored level's quota, trusted only once checked again: anything invalid is no quota at that level. */
export function acceptQuota(dimension: Dimension, rawLevel: unknown): QuotaValue | undefined {
  if (typeof rawLevel !== 'object' || rawLevel === null) return undefined;
  const checked = validateQuota(dimension, (rawLevel as { quota?: unknown }).quota);
  return checked.ok && checked.value !== null ? checked.value : undefined;
}

/** The quota in force for a dimension: the first level that sets one; undefined when none does. */
export function resolveQuota(dimension: Dimension, levels: LimitLevels): Resolved<QuotaValue, LimitSourceLevel> | undefined {
  return resolveCascade<QuotaValue, LimitSourceLevel>(
    [
      { source: 'TENANT_OVERRIDE', value: levels.override },
      { source: 'TIER', value: levels.tier },
      { source: 'PLATFORM_DEFAULT', value: levels.platformDefault },
    ],
    (raw) => acceptQuota(dimension, raw),
  );
}

/**
 * Whether any level of a tenant's record, or a platform default, names a quota (valid or not): a check cheaper
 * than resolving the cascade, for the thousands of tenants learned at start. False means the tenant has none.
 */
export function setsAnyQuota(record: Pick<TenantGovernanceRecord, 'levels'>, platformDefaults: Partial<Record<Dimension, unknown>>): boolean {
  for (const levels of Object.values(record.levels)) {
    if (levels !== undefined && (namesQuota(levels.override) || namesQuota(levels.tier) || namesQuota(levels.platformDefault))) return true;
  }
  for (const raw of Object.values(platformDefaults)) if (namesQuota(raw)) return true;
  return false;
}

function namesQuota(rawLevel: unknown): boolean {
  return typeof rawLevel === 'object' && rawLevel !== null && (rawLevel as { quota?: unknown }).quota != null;
}

/** Milliseconds `timeZone` is ahead of UTC at the instant `atMs`. */
function zoneOffsetMs(format: Intl.DateTimeFormat, atMs: number): number {
  let year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  for (const part of format.formatToParts(atMs)) {
    const value = Number(part.value);
    if (part.type === 'year') year = value;
    else if (part.type === 'month') month = value;
    else if (part.type === 'day') day = value;
    else if (part.type === 'hour') hour = value;
    else if (part.type === 'minute') minute = value;
    else if (part.type === 'second') second = value;
  }
  const wall = Date.UTC(year, month - 1, day, hour, minute, second);
  return wall - (atMs - (((atMs % 1000) + 1000) % 1000));
}

/** The UTC instant of local midnight starting (year, month0, day) in the zone (DST-safe: the offset is read twice). */
function localMidnight(format: Intl.DateTimeFormat, year: number, month0: number, day: number): number {
  const wall = Date.UTC(year, month0, day);
  const guess = wall - zoneOffsetMs(format, wall);
  return wall - zoneOffsetMs(format, guess);
}

export interface QuotaPeriodSpan {
  startMs: number;
  endMs: number;
}

/** The period of `quota` that contains `atMs`: from its start (inclusive) to the next one's (exclusive). */
export function quotaPeriodAt(quota: QuotaValue, atMs: number): QuotaPeriodSpan {
  const format = zoneFormat(quota.timeZone) ?? zoneFormat('UTC')!;
  const local = new Date(atMs + zoneOffsetMs(format, atMs));
  const year = local.getUTCFullYear();
  const month0 = local.getUTCMonth();
  const day = local.getUTCDate();
  if (quota.period === 'DAY') {
    const startMs = localMidnight(format, year, month0, day);
    return startMs <= atMs
      ? { startMs, endMs: localMidnight(format, year, month0, day + 1) }
      : { startMs: localMidnight(format, year, month0, day - 1), endMs: startMs };
  }
  const startMonth = day >= quota.resetDay ? month0 : month0 - 1;
  let startMs = localMidnight(format, year, startMonth, quota.resetDay);
  let endMs = localMidnight(format, year, startMonth + 1, quota.resetDay);
  if (startMs > atMs) {
    endMs = startMs;
    startMs = localMidnight(format, year, startMonth - 1, quota.resetDay);
  }
  return { startMs, endMs };
}
