// The Recorder's key index (src/ledger/keySourceIndex.ts): where each key stored within the hour is listed, found by
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
  it('finds each of a tenant\'s keys where it was last listed, for half an hour to an hour after it was listed', () => {
    const index = new KeySourceIndex();
    const generation = index.advance(NOON);
    const ingest = summary({ tenantId: 'acme', dimension: 'INGEST', allowance: 'HTTP' });
    const requests = summary({ tenantId: 'acme', dimension: 'API_REQUESTS', allowance: null });
    const live = summary({ tenantId: 'acme', dimension: 'INGEST', allowance: 'LIVE' });
    const other = summary({ tenantId: 'beta', dimension: 'INGEST', allowance: 'HTTP' });
    index.register(generation, 'e1', [ingest, requests, other], NOON);
    expect(index.find({ ...ingest })).toMatchObject({ eventId: 'e1', row: 0 });
    expect(index.find({ ...requests })).toMatchObject({ eventId: 'e1', row: 1 });
    expect(index.find({ ...other })).toMatchObject({ eventId: 'e1', row: 2 });
    expect(index.find({ ...live })).toBeUndefined();
    expect(index.find({ ...ingest, tenantId: 'gamma' })).toBeUndefined();
    // Listed again later: found where it was listed last.
    index.advance(NOON + 60_000);
    index.register(generation, 'e2', [live, requests], NOON + 60_000);
    expect(index.find({ ...requests })).toMatchObject({ eventId: 'e2', row: 1 });
    expect(index.find({ ...live })).toMatchObject({ eventId: 'e2', row: 0 });
    expect(index.find({ ...ingest })).toMatchObject({ eventId: 'e1', row: 0 });
    // An event planned before the index was last forgotten is not registered.
    index.register(generation - 1, 'old', [summary({ tenantId: 'delta' })], NOON);
    expect(index.find(summary({ tenantId: 'delta' }))).toBeUndefined();
    // Within half an hour of its listing every key is found; an hour after it, none.
    index.advance(NOON + HOUR_MS / 2 - 1);
    expect(index.find({ ...ingest })).toMatchObject({ eventId: 'e1' });
    index.advance(NOON + HOUR_MS);
    expect(index.find({ ...ingest })).toBeUndefined();
    expect(index.find({ ...other })).toBeUndefined();
    index.advance(NOON + 60_000 + HOUR_MS);
    expect(index.find({ ...live })).toBeUndefined();
  });

  it('lets the listings of keys first listed together expire spread over the hour\'s second half, not at once', () => {
    const index = new KeySourceIndex();
    const generation = index.advance(NOON);
    const keys = Array.from({ length: 1_000 }, (_, i) => summary({ tenantId: `t${i}` }));
    index.register(generation, 'e1', keys, NOON);
    const found = (atMs: number) => {
      index.advance(atMs);
      return keys.filter((key) => index.find(key) !== undefined).length;
    };
    expect(found(NOON + HOUR_MS / 2 - 1)).toBe(1_000);
    const at45 = found(NOON + (3 * HOUR_MS) / 4);
    expect(at45).toBeGreaterThan(300);
    expect(at45).toBeLessThan(700);
    expect(found(NOON + HOUR_MS)).toBe(0);
  });

  it('forgets every listing when the ledger refused a reference, and registers nothing planned before', () => {
    const index = new KeySourceIndex();
    // Midnight is nothing to the index: the ledger refuses a reference recorded in another day than its source.
    const midnight = Date.UTC(2026, 11, 4);
    const before = index.advance(midnight - 1_000);
    index.register(before, 'e1', [summary({ tenantId: 'acme' })], midnight - 1_000);
    expect(index.advance(midnight + 1_000)).toBe(before);
    expect(index.find(summary({ tenantId: 'acme' }))).toMatchObject({ eventId: 'e1' });
    index.forget();
    expect(index.find(summary({ tenantId: 'acme' }))).toBeUndefined();
    // A table event planned before the forget and stored after it is not registered; one planned after is.
    index.register(before, 'planned-before', [summary({ tenantId: 'acme' })], midnight + 500);
    expect(index.find(summary({ tenantId: 'acme' }))).toBeUndefined();
    const after = index.advance(midnight + 2_000);
    expect(after).toBe(before + 1);
    index.register(after, 'e2', [summary({ tenantId: 'acme' })], midnight + 2_000);
    expect(index.find(summary({ tenantId: 'acme' }))).toMatchObject({ eventId: 'e2' });
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
