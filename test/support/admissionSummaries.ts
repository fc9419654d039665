// An AdmissionSummary for tests: one second of acme's INGEST on the LIVE allowance with every count zero,
// changed only where a test says so.
import type { AdmissionSummary } from '../../src/governance/index.ts';

export function admissionSummary(overrides: Partial<AdmissionSummary> & Pick<AdmissionSummary, 'fromSecond'>): AdmissionSummary {
  return {
    tenantId: 'acme',
    dimension: 'INGEST',
    allowance: 'LIVE',
    seconds: 1,
    admittedUnits: 0,
    admittedMessages: 0,
    shedUnits: 0,
    shedMessages: 0,
    rejectedUnits: 0,
    rejectedMessages: 0,
    hitSeconds: 0,
    ...overrides,
  };
}
