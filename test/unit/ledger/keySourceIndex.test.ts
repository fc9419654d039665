// The Recorder's key index (src/ledger/keySourceIndex.ts): where each key stored this hour is listed, found by
// tenant without a key string, and which summaries may be written as references.
import { describe, expect, it } from 'vitest';
import type { AdmissionSummary } from '../../../src/governance/index.ts';
import { COUNT_FIELDS } from '../../../src/ledger/catalog/summaryRefs.ts';
import { hasIntegerCounts, isReferable, KeySourceIndex } from '../../../src/ledger/keySourceIndex.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';

const HOUR_MS = 3_600_000;
const NOON = Date.UTC(2026, 11, 3, 12, 30);
const summary = (overrides: Partial<AdmissionSummary>) => admissionSummary({ fromSecond: NOON / 1000, ...overrides });

describe('the key index', () => {
  it('finds each of a tenant\'s keys where it was last listed, this hour only', () => {
    const index = new KeySourceIndex();
    const epoch = index.advance(NOON);
    const ingest = summary({ tenantId: 'acme', dimension: 'INGEST', allowance: 'HTTP' });
    const requests = summary({ tenantId: 'acme', dimension: 'API_REQUESTS', allowance: null });
    const live = summary({ tenantId: 'acme', dimension: 'INGEST', allowance: 'LIVE' });
    const other = summary({ tenantId: 'beta', dimension: 'INGEST', allowance: 'HTTP' });
    index.register(epoch, 'e1', [ingest, requests, other]);
    expect(index.find({ ...ingest })).toMatchObject({ eventId: 'e1', row: 0 });
    expect(index.find({ ...requests })).toMatchObject({ eventId: 'e1', row: 1 });
    expect(index.find({ ...other })).toMatchObject({ eventId: 'e1', row: 2 });
    expect(index.find({ ...live })).toBeUndefined();
    expect(index.find({ ...ingest, tenantId: 'gamma' })).toBeUndefined();
    // Listed again later in the hour: found where it was listed last.
    index.register(epoch, 'e2', [live, requests]);
    expect(index.find({ ...requests })).toMatchObject({ eventId: 'e2', row: 1 });
    expect(index.find({ ...live })).toMatchObject({ eventId: 'e2', row: 0 });
    expect(index.find({ ...ingest })).toMatchObject({ eventId: 'e1', row: 0 });
    // An event planned in the hour before is not registered; the next hour starts empty.
    index.register(epoch! - 1, 'old', [summary({ tenantId: 'delta' })]);
    expect(index.find(summary({ tenantId: 'delta' }))).toBeUndefined();
    index.advance(NOON + HOUR_MS);
    expect(index.find({ ...ingest })).toBeUndefined();
  });

  it('writes a summary as a reference only with integer counts in every count column, and no shadow or quota counts', () => {
    expect(hasIntegerCounts(summary({}))).toBe(true);
    expect(isReferable(summary({}))).toBe(true);
    for (const field of COUNT_FIELDS) {
      expect(hasIntegerCounts(summary({ [field]: 0.5 })), field).toBe(false);
      expect(hasIntegerCounts(summary({ [field]: 2 ** 53 })), field).toBe(false);
      expect(hasIntegerCounts(summary({ [field]: '3' as never })), field).toBe(false);
      expect(hasIntegerCounts(summary({ [field]: undefined })), field).toBe(true);
    }
    for (const field of ['shadowLimitedUnits', 'shadowLimitedMessages', 'quotaRejectedUnits', 'quotaRejectedMessages'] as const) {
      expect(isReferable(summary({ [field]: 1 })), field).toBe(false);
      expect(isReferable(summary({ [field]: 0 })), field).toBe(true);
    }
  });
});
