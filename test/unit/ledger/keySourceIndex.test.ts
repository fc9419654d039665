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
    const epoch = index.advance(NOON);
    const ingest = summary({ tenantId: 'acme', dimension: 'INGEST', allowance: 'HTTP' });
    const requests = summary({ tenantId: 'acme', dimension: 'API_REQUESTS', allowance: null });
    const live = summary({ tenantId: 'acme', dimension: 'INGEST', allowance: 'LIVE' });
    const other = summary({ tenantId: 'beta', dimension: 'INGEST', allowance: 'HTTP' });
    index.register(epoch, 'e1', [ingest, requests, other], NOON);
    expect(index.find({ ...ingest })).toMatchObject({ eventId: 'e1', row: 0 });
    expect(index.find({ ...requests })).toMatchObject({ eventId: 'e1', row: 1 });
    expect(index.find({ ...other })).toMatchObject({ eventId: 'e1', row: 2 });
    expect(index.find({ ...live })).toBeUndefined();
    expect(index.find({ ...ingest, tenantId: 'gamma' })).toBeUndefined();
    // Listed again later: found where it was listed last.
    index.advance(NOON + 60_000);
    index.register(epoch, 'e2', [live, requests], NOON + 60_000);
    expect(index.find({ ...requests })).toMatchObject({ eventId: 'e2', row: 1 });
    expect(index.find({ ...live })).toMatchObject({ eventId: 'e2', row: 0 });
    expect(index.find({ ...ingest })).toMatchObject({ eventId: 'e1', row: 0 });
    // An event planned on the day before is not registered.
    index.register(epoch! - 1, 'old', [summary({ tenantId: 'delta' })], NOON - 86_400_000);
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
    const epoch = index.advance(NOON);
    const keys = Array.from({ length: 1_000 }, (_, i) => summary({ tenantId: `t${i}` }));
    index.register(epoch, 'e1', keys, NOON);
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

  it('refers to nothing within five minutes of a UTC midnight, and starts over on a new day', () => {
    const index = new KeySourceIndex();
    const midnight = Date.UTC(2026, 11, 4);
    const before = midnight - 10 * 60_000;
    const epoch = index.advance(before);
    index.register(epoch, 'e1', [summary({ tenantId: 'acme' })], before);
    expect(index.find(summary({ tenantId: 'acme' }))).toMatchObject({ eventId: 'e1' });
    expect(index.advance(midnight - 60_000)).toBeNull();
    expect(index.find(summary({ tenantId: 'acme' }))).toBeUndefined();
    expect(index.advance(midnight + 6 * 60_000)).not.toBeNull();
    expect(index.find(summary({ tenantId: 'acme' }))).toBeUndefined();
  });

  it('with the database\'s clock known, refers to nothing from a minute before its midnight (and the error) until it has surely passed', () => {
    const index = new KeySourceIndex();
    const midnight = Date.UTC(2026, 11, 4);
    const known = (storeMs: number) => ({ nowMs: storeMs, errorMs: 1_500 });
    // The Recorder's clock is beside the point: only the database's picks the day.
    const epoch = index.advance(midnight - 10 * 60_000, known(midnight - 10 * 60_000));
    expect(epoch).toBe(Math.floor((midnight - 1) / 86_400_000));
    index.register(epoch, 'e1', [summary({ tenantId: 'acme' })], midnight - 10 * 60_000);
    expect(index.advance(midnight - 4 * 60_000, known(midnight - 61_501))).toBe(epoch);
    expect(index.find(summary({ tenantId: 'acme' }))).toMatchObject({ eventId: 'e1' });
    expect(index.advance(midnight - 4 * 60_000, known(midnight - 61_500))).toBeNull();
    expect(index.find(summary({ tenantId: 'acme' }))).toBeUndefined();
    expect(index.advance(midnight, known(midnight + 1_499))).toBeNull();
    expect(index.advance(midnight, known(midnight + 1_500))).toBe(epoch! + 1);
    // The database's clock three minutes ahead of the Recorder's: its midnight, not the Recorder's.
    const ahead = new KeySourceIndex();
    expect(ahead.advance(midnight - 3 * 60_000 + 2_000, known(midnight + 2_000))).toBe(epoch! + 1);
    expect(ahead.advance(midnight - 3 * 60_000 - 60_000, known(midnight - 60_000))).toBeNull();
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
