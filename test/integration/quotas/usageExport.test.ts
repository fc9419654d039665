// Usage you can bill from: summaries over a month written by the ledger Recorder (a quota's tenant and one
// without), exported per tenant, dimension and day and per month; each export's sums match the ledger's own
// summaries for the month exactly, and CSV and NDJSON carry the same rows.
import { expect, it } from 'vitest';
import { describeOnEachStorage, eventStoreForFile } from '../../support/databases.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';
import { ADMISSIONS_STREAM, createLedgerRecorder, entriesOf, isSummaryRefTable, SummaryKeySources, type AdmissionsRecordedData, type EventStore } from '../../../src/ledger/index.ts';
import { usage, usageCsv, usageNdjson } from '../../../src/quotas/index.ts';
import type { AdmissionSummary } from '../../../src/governance/index.ts';
import { MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';
import { readWholeLedger } from '../../support/readLedger.ts';

const JUNE = Date.UTC(2026, 5, 1) / 1000;

describeOnEachStorage('usage export on $name', (target) => {
  let store: EventStore;

  eventStoreForFile(target, (ledger) => ({ store } = ledger));

  it("matches the ledger's summaries for the month exactly, per day and per month", async () => {
    // As the service records: a summary whose key was stored earlier in the hour is a reference to it. The
    // Recorder's clock is fixed at midday: within five minutes of a UTC midnight it writes no references.
    const recorder = createLedgerRecorder(store, { referenceKeys: true, now: () => (JUNE + 14 * 86_400 + 12 * 3600) * 1000 });
    const written: AdmissionSummary[] = [];
    // 30 days of June, a summary every 5 hours per tenant, plus the last hours of May and the first of July.
    for (let second = JUNE - 6 * 3600; second < JUNE + 31 * 86_400; second += 5 * 3600) {
      const day = Math.floor((second - JUNE) / 86_400);
      const batch = [
        admissionSummary({ tenantId: 'acme', fromSecond: second, admittedUnits: 40 + day, shedUnits: day % 3, rejectedUnits: 2, quotaRejectedUnits: 1, quotaRejectedMessages: 1 }),
        admissionSummary({ tenantId: 'globex', fromSecond: second, admittedUnits: 7, rejectedUnits: day % 2 }),
      ];
      written.push(...batch);
      await recorder.record(batch, []);
    }
    const limits = new MemoryLimitSource().tenant('acme', { INGEST: { tier: { ratePerSecond: 100, quota: { period: 'DAY', limit: 300 } } } }).tenant('globex', {});
    const june = { from: new Date(JUNE * 1000), to: new Date((JUNE + 30 * 86_400) * 1000) };
    // usage reads the ledger's global order, which holds an event back while an older transaction on the shared
    // server is still open: wait until that order reaches what was recorded, as an export of past days would.
    await readWholeLedger(store);
    const daily = await usage(store, limits, { ...june, granularity: 'DAY' });
    const monthly = await usage(store, limits, { ...june, granularity: 'MONTH' });

    // The ledger's own summaries for June, read back.
    const events = await store.readStream(ADMISSIONS_STREAM);
    expect(events.some((event) => isSummaryRefTable(event.data))).toBe(true);
    const sources = new SummaryKeySources();
    const ledger = events.flatMap((event) => {
      sources.remember(event.id, event.data);
      const data = sources.knownTableOf(event.data);
      if (typeof data === 'string') throw new Error(data);
      return entriesOf(data as AdmissionsRecordedData);
    });
    const inJune = ledger.filter((entry) => entry.fromSecond >= JUNE && entry.fromSecond < JUNE + 30 * 86_400);
    expect(inJune.length).toBeGreaterThan(250);
    for (const tenantId of ['acme', 'globex']) {
      const mine = inJune.filter((entry) => entry.tenantId === tenantId);
      const sum = (field: keyof AdmissionSummary) => mine.reduce((total, entry) => total + Number(entry[field] ?? 0), 0);
      for (const rows of [daily, monthly]) {
        const ours = rows.filter((row) => row.tenantId === tenantId);
        const total = (field: 'admittedUnits' | 'shedUnits' | 'rejectedUnits' | 'quotaRejectedUnits') => ours.reduce((t, row) => t + row[field], 0);
        expect(total('admittedUnits')).toBe(sum('admittedUnits'));
        expect(total('shedUnits')).toBe(sum('shedUnits'));
        expect(total('rejectedUnits')).toBe(sum('rejectedUnits'));
        expect(total('quotaRejectedUnits')).toBe(sum('quotaRejectedUnits'));
      }
    }
    expect(monthly.map((row) => [row.tenantId, row.periodStart, row.quotaLimit])).toEqual([
      ['acme', '2026-06-01T00:00:00.000Z', null],
      ['globex', '2026-06-01T00:00:00.000Z', null],
    ]);
    // A daily quota: each day has its limit, used and left.
    const acmeDays = daily.filter((row) => row.tenantId === 'acme');
    expect(acmeDays).toHaveLength(30);
    expect(acmeDays.every((row) => row.quotaLimit === 300 && row.quotaUsed === row.admittedUnits && row.quotaLeft === Math.max(0, 300 - row.admittedUnits))).toBe(true);
    expect(written.length).toBeGreaterThan(inJune.length);

    const csv = usageCsv(daily).trimEnd().split('\n');
    expect(csv[0]).toBe('tenantId,dimension,periodStart,periodEnd,admittedUnits,shedUnits,rejectedUnits,quotaRejectedUnits,quotaLimit,quotaUsed,quotaLeft');
    expect(csv).toHaveLength(daily.length + 1);
    expect(usageNdjson(daily).trimEnd().split('\n').map((line) => JSON.parse(line) as unknown)).toEqual(daily);
  });
});
