// The bounds issue 34 requires of every value a client sends, as the hostile-doors fuzz suite checks them
// (test/e2e/hostileDoors.test.ts). Each is the constant the service exports for it, so the suite checks the
// documented promise and follows the service if a bound is changed on purpose.
import { MAX_UNITS as ADMISSION_MAX_UNITS } from '../../src/doors/admissions/admissionItem.ts';
import { MAX_HITS_ADDEND } from '../../src/doors/envoy-rls/descriptorMapping.ts';
import { LEASE_SUMMARY_MAX_SECONDS } from '../../src/doors/leases/leaseSummary.ts';
import { SEND_TIME_MAX_AGE_MS, SEND_TIME_MAX_AHEAD_MS } from '../../src/doors/pipeline/index.ts';
import { summaryWindowSeconds } from '../../src/governance/tallies.ts';

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
  /** The largest `hits_addend` the RLS door meters. */
  maxHitsAddend: number;
}

export function hostileBounds(): HostileBounds {
  return {
    summaryMaxSeconds: summaryWindowSeconds(FLUSH_INTERVAL_MS),
    sendTimeMaxAgeMs: SEND_TIME_MAX_AGE_MS,
    sendTimeMaxAheadMs: SEND_TIME_MAX_AHEAD_MS,
    leaseSummaryMaxSeconds: LEASE_SUMMARY_MAX_SECONDS,
    maxUnitsPerDecision: ADMISSION_MAX_UNITS,
    maxHitsAddend: MAX_HITS_ADDEND,
  };
}
