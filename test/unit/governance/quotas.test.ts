// Period quotas: the value a level sets (checked, resolved through the cascade), the period in its time zone,
// and the Governor counting a quota alone: refused at limit + 1 as REJECT with the reset as Retry-After,
// tallied as rejected and as quota-rejected, thresholds noticed once per period.
import { describe, expect, it } from 'vitest';
import { Governor, quotaPeriodAt, resolveQuota, validateQuota } from '../../../src/governance/index.ts';
import type { AdmissionSummary, QuotaThresholdCrossing, QuotaValue } from '../../../src/governance/index.ts';
import { MemoryLimitSource } from './memoryLimitSource.ts';

const day = (limit: number, timeZone = 'UTC'): QuotaValue => ({ period: 'DAY', limit, resetDay: 1, timeZone });

describe('quota value', () => {
  it('checks a quota: null and 0 are none, the rest whole and in range, in a known zone', () => {
    expect(validateQuota('INGEST', null)).toEqual({ ok: true, value: null });
    expect(validateQuota('INGEST', { period: 'DAY', limit: 0 })).toEqual({ ok: true, value: null });
    expect(validateQuota('INGEST', { period: 'DAY', limit: 1000 })).toEqual({ ok: true, value: day(1000) });
    expect(validateQuota('INGEST', { period: 'MONTH', limit: 5, resetDay: 15, timeZone: 'Europe/Berlin' })).toEqual({
      ok: true,
      value: { period: 'MONTH', limit: 5, resetDay: 15, timeZone: 'Europe/Berlin' },
    });
    for (const bad of [
      { period: 'WEEK', limit: 5 },
      { period: 'DAY', limit: -1 },
      { period: 'DAY', limit: 1.5 },
      { period: 'DAY', limit: 1e13 },
      { period: 'DAY', limit: '5' },
      { period: 'MONTH', limit: 5, resetDay: 29 },
      { period: 'DAY', limit: 5, resetDay: 3 },
      { period: 'DAY', limit: 5, timeZone: 'Mars/Olympus' },
      { period: 'DAY', limit: 5, timeZone: 'x'.repeat(65) },
      { period: 'DAY', limit: 5, extra: 1 },
      [],
      'DAY',
    ]) {
      expect(validateQuota('INGEST', bad).ok, JSON.stringify(bad)).toBe(false);
    }
    expect(validateQuota('UNDELIVERED_COMMANDS', { period: 'DAY', limit: 5 }).ok).toBe(false);
  });

  it('falls through the cascade where a level sets none, or an invalid one; no quota when no level sets one', () => {
    expect(resolveQuota('INGEST', {})).toBeUndefined();
    expect(resolveQuota('INGEST', { override: { ratePerSecond: 5 }, tier: { quota: { period: 'DAY', limit: 7 } } })).toEqual({ value: day(7), source: 'TIER' });
    expect(resolveQuota('INGEST', { override: { quota: { period: 'DAY', limit: 0 } }, platformDefault: { quota: { period: 'DAY', limit: 9 } } })).toEqual({
      value: day(9),
      source: 'PLATFORM_DEFAULT',
    });
    expect(resolveQuota('INGEST', { override: { quota: { period: 'DAY', limit: -4 } }, tier: { quota: { period: 'MONTH', limit: 3 } } })?.source).toBe('TIER');
  });

  it("finds a period's bounds at midnight in its time zone, across DST, and a month from its reset day", () => {
    const at = Date.parse('2026-03-29T12:00:00Z');
    expect(quotaPeriodAt(day(1), at)).toEqual({ startMs: Date.parse('2026-03-29T00:00:00Z'), endMs: Date.parse('2026-03-30T00:00:00Z') });
    // Berlin moves to summer time on 29 March 2026: that day has 23 hours.
    expect(quotaPeriodAt(day(1, 'Europe/Berlin'), at)).toEqual({ startMs: Date.parse('2026-03-28T23:00:00Z'), endMs: Date.parse('2026-03-29T22:00:00Z') });
    // 23:30 in New York is already the next day in UTC.
    expect(quotaPeriodAt(day(1, 'America/New_York'), Date.parse('2026-07-02T03:30:00Z'))).toEqual({
      startMs: Date.parse('2026-07-01T04:00:00Z'),
      endMs: Date.parse('2026-07-02T04:00:00Z'),
    });
    const month: QuotaValue = { period: 'MONTH', limit: 1, resetDay: 15, timeZone: 'UTC' };
    expect(quotaPeriodAt(month, Date.parse('2026-01-10T00:00:00Z'))).toEqual({ startMs: Date.parse('2025-12-15T00:00:00Z'), endMs: Date.parse('2026-01-15T00:00:00Z') });
    expect(quotaPeriodAt(month, Date.parse('2026-01-15T00:00:00Z'))).toEqual({ startMs: Date.parse('2026-01-15T00:00:00Z'), endMs: Date.parse('2026-02-15T00:00:00Z') });
    expect(quotaPeriodAt({ ...month, resetDay: 1, timeZone: 'Asia/Tokyo' }, Date.parse('2026-05-31T16:00:00Z'))).toEqual({
      startMs: Date.parse('2026-05-31T15:00:00Z'),
      endMs: Date.parse('2026-06-30T15:00:00Z'),
    });
  });
});

describe('the Governor counting a quota alone', () => {
  const start = Date.parse('2026-06-01T10:00:00Z');

  async function governorWith(quota: unknown, onQuotaThreshold?: (crossing: QuotaThresholdCrossing) => void) {
    const summaries: AdmissionSummary[] = [];
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { override: { ratePerSecond: 100_000, burst: 100_000, quota } } });
    const governor = new Governor({
      limitSource: source,
      recorder: { record: async (admissions) => void summaries.push(...admissions) },
      now: () => start,
      ...(onQuotaThreshold ? { onQuotaThreshold } : {}),
    });
    governor.learnLimits(source.records.values(), {});
    return { governor, summaries };
  }

  it('admits 1,000 readings of a daily quota of 1,000 and refuses the 1,001st for the quota, until the next day', async () => {
    const crossings: QuotaThresholdCrossing[] = [];
    const { governor, summaries } = await governorWith({ period: 'DAY', limit: 1000, timeZone: 'UTC' }, (crossing) => crossings.push(crossing));
    const request = (at: number, units = 1) => ({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units, at }) as const;
    let admitted = 0;
    for (let i = 0; i < 1000; i++) if (governor.admit(request(start + i)).admitted) admitted++;
    expect(admitted).toBe(1000);
    const refused = governor.admit(request(start + 1000));
    expect(refused).toMatchObject({ admitted: false, behaviour: 'REJECT', quotaExceeded: true, limit: 1000, remaining: 0 });
    // One second into the day's fourteenth hour before midnight UTC.
    expect(refused.retryAfterSeconds).toBe(14 * 3600 - 1);
    // A refusal for the rate is not one for the quota.
    expect(governor.admit({ ...request(start + 2000), units: 2_000_000 }).quotaExceeded).toBe(false);
    const nextDay = governor.admit(request(Date.parse('2026-06-02T00:00:00Z')));
    expect(nextDay).toMatchObject({ admitted: true, quotaExceeded: false });
    expect(crossings.map((each) => [each.thresholdPercent, each.used, each.periodStartMs])).toEqual([
      [50, 500, Date.parse('2026-06-01T00:00:00Z')],
      [80, 800, Date.parse('2026-06-01T00:00:00Z')],
      [100, 1000, Date.parse('2026-06-01T00:00:00Z')],
    ]);
    await governor.close();
    const total = (field: keyof AdmissionSummary) => summaries.reduce((sum, each) => sum + Number(each[field] ?? 0), 0);
    expect(total('admittedUnits')).toBe(1001);
    expect(total('quotaRejectedUnits')).toBe(1);
    expect(total('rejectedUnits')).toBe(2_000_001);
  });

  it('spends no quota on a request the rate refuses, and no rate on one the quota refuses', async () => {
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { override: { ratePerSecond: 10, burst: 10, quota: { period: 'DAY', limit: 15 } } } });
    const governor = new Governor({ limitSource: source, now: () => start });
    governor.learnLimits(source.records.values(), {});
    const take = (units: number, at = start) => governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units, at });
    expect(take(10).admitted).toBe(true);
    expect(take(5)).toMatchObject({ admitted: false, quotaExceeded: false });
    expect(take(5, start + 1000)).toMatchObject({ admitted: true });
    expect(take(1, start + 2000)).toMatchObject({ admitted: false, quotaExceeded: true });
    await governor.close();
  });
});
