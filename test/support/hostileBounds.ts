// The bounds issue 34 requires of every value a client sends, as the hostile-doors fuzz suite checks them
// (test/e2e/hostileDoors.test.ts). Each is read from the constant the service exports for it where the service
// has one, and otherwise is the value the "Required" text promises (or the value the fix documents), so
// the suite checks the promise, not today's behaviour, and follows the service's constant once it exists.
import { MAX_UNITS as ADMISSION_MAX_UNITS } from '../../src/doors/admissions/admissionItem.ts';

/**
 * A named export of a module of the service, when the module and the export exist; otherwise undefined. For
 * bounds a fix adds: the suite reads them without failing to compile before the fix is merged.
 */
async function exportOf<T>(modulePath: string, name: string, valid: (value: unknown) => value is T): Promise<T | undefined> {
  try {
    const module = (await import(/* @vite-ignore */ new URL(modulePath, import.meta.url).href)) as Record<string, unknown>;
    const value = module[name];
    return valid(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

const isPositive = (value: unknown): value is number => typeof value === 'number' && value > 0;
const isWindowFunction = (value: unknown): value is (flushIntervalMs: number) => number => typeof value === 'function';

/** The Governor's flush interval (its default, 1 s): the Recorder gets each second's tallies within it. */
export const FLUSH_INTERVAL_MS = 1_000;

export interface HostileBounds {
  /** "A summary never spans more than its flush interval": the most seconds one AdmissionsRecorded entry covers. */
  summaryMaxSeconds: number;
  /** A send time older than this (a backlog window) is metered at arrival: no summary starts earlier than now minus this. */
  sendTimeMaxAgeMs: number;
  /** A client time further ahead than this is not believed (a lease summary may end at most this far ahead). */
  sendTimeMaxAheadMs: number;
  /** A leasing client's summary spans at most this many seconds, all within one minute (its lease's reporting period). */
  leaseSummaryMaxSeconds: number;
  /** Units in one decision (the admission API's documented maximum): larger is never-fits or an error, never a grant. */
  maxUnitsPerDecision: number;
  /** The largest `hits_addend` the RLS door meters (the admission maximum until the RLS door documents its own). */
  maxHitsAddend: number;
}

export async function hostileBounds(): Promise<HostileBounds> {
  const windowOf = await exportOf('../../src/governance/tallies.ts', 'summaryWindowSeconds', isWindowFunction);
  const summaryMaxSeconds = windowOf ? windowOf(FLUSH_INTERVAL_MS) : Math.max(1, Math.ceil(FLUSH_INTERVAL_MS / 1000));
  // The issue: older than the backlog window is metered at arrival. The fix's window is 7 days (the retention of
  // minute trends), exported from the pipeline.
  const sendTimeMaxAgeMs = (await exportOf('../../src/doors/pipeline/index.ts', 'SEND_TIME_MAX_AGE_MS', isPositive)) ?? 7 * 24 * 3600_000;
  const sendTimeMaxAheadMs = (await exportOf('../../src/doors/pipeline/index.ts', 'SEND_TIME_MAX_AHEAD_MS', isPositive)) ?? 60_000;
  // A client merges its undelivered seconds of a key per minute (packages/client): at most 60 seconds, in one minute.
  const leaseSummaryMaxSeconds = (await exportOf('../../src/doors/leases/leaseSummary.ts', 'LEASE_SUMMARY_MAX_SECONDS', isPositive)) ?? 60;
  const maxHitsAddend =
    (await exportOf('../../src/doors/envoy-rls/descriptorMapping.ts', 'MAX_HITS_ADDEND', isPositive)) ??
    (await exportOf('../../src/doors/envoy-rls/rateLimitService.ts', 'MAX_HITS_ADDEND', isPositive)) ??
    ADMISSION_MAX_UNITS;
  return { summaryMaxSeconds, sendTimeMaxAgeMs, sendTimeMaxAheadMs, leaseSummaryMaxSeconds, maxUnitsPerDecision: ADMISSION_MAX_UNITS, maxHitsAddend };
}
