// Events the Governor's recorder appends: per-window summaries, so every admitted and shed unit is counted
// without one event per decision.
import type { AdmissionSummary, UnresolvedAdmissionSummary } from '../../governance/index.ts';

/** All admission summaries go to one stream; ordering within it is the recording order. */
export const ADMISSIONS_STREAM = 'governance-admissions';

export interface AdmissionsRecordedData {
  entries: AdmissionSummary[];
}

export interface UnresolvedAdmissionsRecordedData {
  entries: UnresolvedAdmissionSummary[];
}

export type AdmissionEventMap = {
  AdmissionsRecorded: AdmissionsRecordedData;
  UnresolvedAdmissionsRecorded: UnresolvedAdmissionsRecordedData;
};
