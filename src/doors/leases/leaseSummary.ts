// One summary of a leasing client's decisions, checked field by field before anything is recorded. A summary
// is what a client admitted and refused on one (tenant, dimension, allowance) over a span of seconds; it goes
// to the ledger as an AdmissionsRecorded entry, so every number in it is bounded here (issue 34: one
// summary of `"seconds": 1000000000000` made the trend projection cut billions of minute buckets, and
// `admittedUnits: 1e12` was recorded as it came). A bad summary is refused alone, with the field and the
// reason; nothing of it is recorded. The bounds (README.md in this folder):
//   - id: optional, 1 to 64 of [A-Za-z0-9_.:-] (the client sends a UUID); a summary with an id is stored once
//     however often it is sent;
//   - seconds: 1 to 60, all within one minute of the clock (a client merges undelivered seconds of a key per
//     minute), so a summary never reaches past one trend bucket;
//   - the span within the window every client time is held to: from at most 7 days back to at most 60 s ahead;
//   - admittedUnits at most (seconds + 1) x LIMIT_MAX: the most any tenant's limits can grant in the span (a
//     burst plus the rate over it, each at most LIMIT_MAX);
//   - admittedCount, refusedUnits, refusedCount at most seconds x 10^9 (the admission API's most per item);
//   - hitSeconds at most seconds; every number a whole one.
import { DIMENSION_CATALOG, ID_PATTERN, LIMIT_MAX, slotIndexOf } from '../../governance/index.ts';
import type { AdmissionSummary, Allowance, Dimension } from '../../governance/index.ts';
import { sendTimeOutOfWindow, SEND_TIME_MAX_AGE_MS, SEND_TIME_MAX_AHEAD_MS } from '../pipeline/index.ts';

export const LEASE_SUMMARY_MAX_SECONDS = 60;
/** Refused units and decisions per second of a summary, at most: the admission API's most units per item. */
export const LEASE_SUMMARY_MAX_PER_SECOND = 1_000_000_000;
export const LEASE_SUMMARY_ID_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;

export interface SummaryError {
  field: string;
  reason: string;
}

export type ReadSummary = { status: 'valid'; summary: AdmissionSummary; id: string | undefined } | { status: 'invalid'; error: SummaryError };

export interface LeaseKey {
  tenantId: string;
  dimension: Dimension;
  allowance: Allowance | null;
}

/** The (tenant, dimension, allowance) an entry names, or what is wrong with it. */
export function leaseKeyOf(raw: unknown): LeaseKey | SummaryError {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { field: '', reason: 'a JSON object' };
  const { tenantId, dimension, allowance } = raw as Record<string, unknown>;
  if (typeof tenantId !== 'string' || !ID_PATTERN.test(tenantId)) {
    return { field: 'tenantId', reason: 'a tenant ID: a letter or digit, then up to 63 letters, digits, _ . : or -' };
  }
  if (typeof dimension !== 'string' || !Object.hasOwn(DIMENSION_CATALOG, dimension)) return { field: 'dimension', reason: 'a dimension' };
  const named = allowance ?? null;
  if (named !== null && typeof named !== 'string') return { field: 'allowance', reason: 'an allowance name, or absent' };
  if (slotIndexOf(dimension as Dimension, named as Allowance | null) < 0) {
    return { field: 'allowance', reason: `not an allowance ${dimension} is metered on by leases` };
  }
  return { tenantId, dimension: dimension as Dimension, allowance: named as Allowance | null };
}

const wholeNumber = (value: unknown, max: number): value is number => typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= max;

/** Checks one client summary against the bounds above, at the service's clock `nowMs`. */
export function readLeaseSummary(raw: unknown, nowMs: number): ReadSummary {
  const key = leaseKeyOf(raw);
  if ('field' in key) return { status: 'invalid', error: key };
  const s = raw as Record<string, unknown>;
  const invalid = (field: string, reason: string): ReadSummary => ({ status: 'invalid', error: { field, reason } });
  const id = s.id ?? undefined;
  if (id !== undefined && (typeof id !== 'string' || !LEASE_SUMMARY_ID_PATTERN.test(id))) return invalid('id', '1 to 64 letters, digits, _ . : or -, or absent');
  const { fromSecond, seconds } = s;
  if (!wholeNumber(seconds, LEASE_SUMMARY_MAX_SECONDS) || seconds < 1) return invalid('seconds', `a whole number from 1 to ${LEASE_SUMMARY_MAX_SECONDS}`);
  if (typeof fromSecond !== 'number' || !Number.isSafeInteger(fromSecond)) return invalid('fromSecond', 'a whole number of Unix seconds');
  const toSecond = fromSecond + seconds - 1;
  if (Math.floor(fromSecond / 60) !== Math.floor(toSecond / 60)) return invalid('seconds', 'the span lies within one minute (UTC)');
  if (sendTimeOutOfWindow(fromSecond * 1000, nowMs) === 'too-old') {
    return invalid('fromSecond', `at most ${SEND_TIME_MAX_AGE_MS / 86_400_000} days back`);
  }
  if (sendTimeOutOfWindow(toSecond * 1000, nowMs) === 'future') {
    return invalid('fromSecond', `the span ends at most ${SEND_TIME_MAX_AHEAD_MS / 1000} s ahead`);
  }
  const maxAdmitted = (seconds + 1) * LIMIT_MAX;
  if (!wholeNumber(s.admittedUnits, maxAdmitted)) return invalid('admittedUnits', `a whole number from 0 to ${maxAdmitted} ((seconds + 1) x ${LIMIT_MAX})`);
  const maxPerSpan = seconds * LEASE_SUMMARY_MAX_PER_SECOND;
  for (const field of ['admittedCount', 'refusedUnits', 'refusedCount'] as const) {
    if (!wholeNumber(s[field], maxPerSpan)) return invalid(field, `a whole number from 0 to ${maxPerSpan} (seconds x ${LEASE_SUMMARY_MAX_PER_SECOND})`);
  }
  if (!wholeNumber(s.hitSeconds, seconds)) return invalid('hitSeconds', 'a whole number from 0 to seconds');
  const spec = DIMENSION_CATALOG[key.dimension];
  const behaviour = (key.allowance && spec.overLimitByAllowance[key.allowance]) || spec.overLimit;
  const shed = behaviour === 'SHED' || behaviour === 'DROP_ACCEPTED';
  const refusedUnits = s.refusedUnits as number;
  const refusedCount = s.refusedCount as number;
  return {
    status: 'valid',
    id,
    summary: {
      tenantId: key.tenantId,
      dimension: key.dimension,
      allowance: key.allowance,
      fromSecond,
      seconds,
      admittedUnits: s.admittedUnits,
      admittedMessages: s.admittedCount as number,
      shedUnits: shed ? refusedUnits : 0,
      shedMessages: shed ? refusedCount : 0,
      rejectedUnits: shed ? 0 : refusedUnits,
      rejectedMessages: shed ? 0 : refusedCount,
      hitSeconds: s.hitSeconds,
      ...(id !== undefined ? { id } : {}),
    },
  };
}
