import { expect, it } from 'vitest';
import { describeOnEachStorage, eventStoreForFile } from '../../support/databases.ts';
import type { TestDb } from '../../support/databases.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { ADMISSIONS_STREAM, entriesOf, type AdmissionsRecordedData } from '../../../src/ledger/catalog/admissions.ts';
import { isSummaryRefTable, SummaryKeySources } from '../../../src/ledger/catalog/summaryRefs.ts';
import { addSummaryDemand, DemandMinutes, EVERY_REPLAYED_SUMMARY } from '../../../src/limit-preview/index.ts';
import { lookUpSummaryEvent } from '../../../src/ledger/postgres/lookUpSummaryEvent.ts';
import { partitionClockMs } from '../../../src/ledger/postgres/summaryPartitions.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { rebuildProjection } from '../../../src/ledger/rebuild.ts';
import { listQuarantine } from '../../../src/ledger/quarantine.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import type { AdmissionSummary } from '../../../src/governance/index.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';

// 08:00 UTC: far from a midnight, where the Recorder writes no references.
const T0 = 1_800_000_000_000;

describeOnEachStorage('summary references on $name', (target) => {
  let testDb: TestDb;
  let store: EventStore;

  eventStoreForFile(target, (ledger) => ({ testDb, store } = ledger));

  async function appendedBy(act: () => Promise<void>) {
    const before = await store.readStream(ADMISSIONS_STREAM);
    await act();
    return (await store.readStream(ADMISSIONS_STREAM)).slice(before.length);
  }

  const second = (tenants: string[], fromSecond: number, counts: Partial<AdmissionSummary> = {}) =>
    tenants.map((tenantId, i) =>
      admissionSummary({ tenantId, fromSecond, admittedUnits: 3 + (i % 2), admittedMessages: 1, shedUnits: 10, shedMessages: 1, unauthenticatedUnits: 0, unauthenticatedMessages: 0, ...counts }),
    );

  /** The events' summaries as a reader that starts with no sources reads them (each source looked up). */
  async function readBack(events: { data: unknown }[]) {
    const sources = new SummaryKeySources();
    const entries: AdmissionSummary[] = [];
    for (const event of events) {
      const table = await sources.tableOf(event.data as AdmissionsRecordedData, (id) => lookUpSummaryEvent(testDb.db, id));
      if (typeof table === 'string') throw new Error(table);
      entries.push(...entriesOf(table));
    }
    return entries;
  }

  it('writes a key once an hour and refers to it after, every summary read back whole', async () => {
    let clock = T0;
    const recorder = createLedgerRecorder(store, { referenceKeys: true, now: () => clock, maxEntriesPerEvent: 3 });
    const tenants = ['a', 'b', 'c', 'd', 'e'];
    const first = await appendedBy(() => recorder.record(second(tenants, T0 / 1000), [], 'batch-1'));
    expect(first.every((event) => !isSummaryRefTable(event.data))).toBe(true);
    clock += 1000;
    // Another order, one key new, one absent, one summary with a fraction (written out in full).
    const later = [...second(['e', 'c', 'a', 'f', 'b'], T0 / 1000 + 1, { shedUnits: 7 }), admissionSummary({ tenantId: 'd', fromSecond: T0 / 1000 + 1, admittedUnits: 0.5 })];
    const events = await appendedBy(() => recorder.record(later, [], 'batch-2'));
    const references = events.filter((event) => isSummaryRefTable(event.data));
    expect(references.length).toBeGreaterThan(0);
    expect(references.map((event) => (event.data as { keysOf: string }).keysOf).every((id) => first.some((event) => event.id === id))).toBe(true);
    const byKey = (entries: AdmissionSummary[]) => [...entries].sort((x, y) => (x.tenantId < y.tenantId ? -1 : 1));
    expect(byKey(await readBack(events))).toEqual(byKey(later.map((entry) => ({ ...entry, unauthenticatedUnits: entry.unauthenticatedUnits ?? 0, unauthenticatedMessages: entry.unauthenticatedMessages ?? 0 }))));
    // A reference is a few dozen bytes whatever its keys are.
    expect(JSON.stringify(references[0]!.data).length).toBeLessThan(400);

    // An hour after the last listing (batch-2's new and fractional keys), every key is written out again: a
    // listing is referred to for between half an hour and an hour after it was planned (keySourceIndex.ts).
    clock = T0 + 1_000 + 3_600_000;
    const nextHour = await appendedBy(() => recorder.record(second(tenants, clock / 1000), [], 'batch-3'));
    expect(nextHour.some((event) => isSummaryRefTable(event.data))).toBe(false);
  });

  it('a batch of references whose acknowledgement was lost is offered again as the same events, even after the hour turned', async () => {
    let clock = T0 + 3 * 3_600_000 + 3_590_000;
    let loseAcknowledgements = 0;
    const flaky: Pick<EventStore, 'append' | 'appendLimitBytes'> = {
      async append(stream, events, options) {
        const result = await store.append(stream, events, options);
        if (loseAcknowledgements-- > 0) throw new Error('Connection terminated unexpectedly');
        return result;
      },
    };
    // An append per event: the first one's acknowledgement is lost, the rest are appended on the offer again.
    const recorder = createLedgerRecorder(flaky, { referenceKeys: true, now: () => clock, maxEntriesPerEvent: 2, maxAppendBytes: 700 });
    const tenants = ['lost-a', 'lost-b', 'lost-c'];
    await recorder.record(second(tenants, clock / 1000), [], 'lost-1');
    clock += 1000;
    loseAcknowledgements = 1;
    const batch = second([...tenants, 'lost-d'], clock / 1000);
    const events = await appendedBy(async () => {
      await expect(recorder.record(batch, [], 'lost-2')).rejects.toThrow('Connection terminated unexpectedly');
      // The hour turns before the batch is offered again: planned afresh, it would be written out in full
      // under the same ids, and the stored references skipped as the same events.
      clock += 60_000;
      await recorder.record(batch, [], 'lost-2');
    });
    expect(events.filter((event) => isSummaryRefTable(event.data))).toHaveLength(2);
    const read = await readBack(events);
    expect(read.map((entry) => entry.tenantId).sort()).toEqual(['lost-a', 'lost-b', 'lost-c', 'lost-d']);
    expect(read.reduce((sum, entry) => sum + entry.admittedUnits, 0)).toBe(3 + 4 + 3 + 4);
  });

  it('writes no references within five minutes of a UTC midnight, so a reference and its source lie in one day', async () => {
    const midnight = Math.ceil(T0 / 86_400_000) * 86_400_000;
    let clock = midnight - 4 * 60_000;
    const recorder = createLedgerRecorder(store, { referenceKeys: true, now: () => clock });
    await recorder.record(second(['m'], clock / 1000), [], 'm-1');
    clock += 1000;
    const events = await appendedBy(() => recorder.record(second(['m'], clock / 1000), [], 'm-2'));
    expect(events.some((event) => isSummaryRefTable(event.data))).toBe(false);
  });

  it('with the database\'s clock read, refers to keys up to a minute before its midnight, and not within that minute', async () => {
    const midnight = Math.ceil(T0 / 86_400_000) * 86_400_000;
    let clock = midnight - 4 * 60_000;
    // The database's clock as the Recorder reads it: here the test's, so its midnight is the one named.
    const recorder = createLedgerRecorder(store, { referenceKeys: true, now: () => clock, storeClockMs: async () => clock });
    // The first flush plans before the first reading is in (the wide margin: in full).
    const first = await appendedBy(() => recorder.record(second(['n'], clock / 1000), [], 'n-1'));
    expect(first.some((event) => isSummaryRefTable(event.data))).toBe(false);
    clock += 1000;
    await recorder.record(second(['n'], clock / 1000), [], 'n-2');
    clock += 1000;
    const referring = await appendedBy(() => recorder.record(second(['n'], clock / 1000), [], 'n-3'));
    expect(referring.some((event) => isSummaryRefTable(event.data))).toBe(true);
    clock = midnight - 59_000;
    const inFull = await appendedBy(() => recorder.record(second(['n'], clock / 1000), [], 'n-4'));
    expect(inFull.some((event) => isSummaryRefTable(event.data))).toBe(false);
  });

  it('reads the clock that picks the day partition off the database', async () => {
    const before = Date.now();
    const ms = await partitionClockMs(testDb.db);
    // The same machine's clock: within the query's own time of ours.
    expect(ms).toBeGreaterThanOrEqual(before - 1_000);
    expect(ms).toBeLessThanOrEqual(Date.now() + 1_000);
  });

  it('the demand read model adds references up in place, each minute found by position, as it adds the tables they stand for', async () => {
    // Two seconds before a minute's end and two after, tenants in another order each second, one absent once, a
    // span of three seconds across the minute, and two dimensions: every path of the position look-up.
    let clock = T0 + 10_800_000 + 58_000;
    const recorder = createLedgerRecorder(store, { referenceKeys: true, now: () => clock });
    const events = await appendedBy(async () => {
      for (const [s, tenants] of [['demand-a', 'demand-b', 'demand-c'], ['demand-c', 'demand-a'], ['demand-b', 'demand-c', 'demand-a'], ['demand-a', 'demand-b', 'demand-c']].entries()) {
        const fromSecond = clock / 1000;
        const summaries = second(tenants, fromSecond, { dimension: 'API_REQUESTS', admittedUnits: 2 + s });
        summaries.push(...second(['demand-a'], fromSecond, { admittedUnits: 5 + s, shedUnits: s }));
        if (s === 1) summaries.push(...second(['demand-b'], fromSecond, { dimension: 'EGRESS', seconds: 3, admittedUnits: 9 }));
        await recorder.record(summaries, [], `demand-${s}`);
        clock += 1000;
      }
    });
    const viaTables = new DemandMinutes();
    const viaPositions = new DemandMinutes();
    const tableSources = new SummaryKeySources();
    const positionSources = new SummaryKeySources();
    let decodedEvents = 0;
    for (const event of events) {
      const data = event.data as AdmissionsRecordedData;
      tableSources.remember(event.id, data);
      positionSources.remember(event.id, data);
      const table = await tableSources.tableOf(data, (id) => lookUpSummaryEvent(testDb.db, id));
      const decoded = await positionSources.decodedOf(data, (id) => lookUpSummaryEvent(testDb.db, id));
      if (typeof table === 'string' || typeof decoded === 'string') throw new Error(String(table));
      addSummaryDemand(viaTables, table, EVERY_REPLAYED_SUMMARY);
      if ('positions' in decoded) decodedEvents++;
      addSummaryDemand(viaPositions, decoded, EVERY_REPLAYED_SUMMARY);
    }
    expect(decodedEvents).toBe(3);
    const minutesOf = (minutes: DemandMinutes) =>
      [...minutes.values()].map((minute) => `${minute.minuteStart} ${minute.dimension} ${minute.tenantId} ${minute.allowance} ${minute.bytes.join('.')}`).sort();
    expect(minutesOf(viaPositions)).toEqual(minutesOf(viaTables));
    // Two minutes each of API_REQUESTS, INGEST and EGRESS (the span's).
    expect(new Set(minutesOf(viaTables).map((line) => line.split(' ').slice(0, 2).join(' '))).size).toBe(6);
    expect(viaPositions.bytes).toBe(viaTables.bytes);
  });

  it('the trend projection reads references as the summaries they stand for, and sets aside one whose source is gone', async () => {
    let clock = T0 + 7_200_000;
    const recorder = createLedgerRecorder(store, { referenceKeys: true, now: () => clock });
    const tenants = ['trend-a', 'trend-b'];
    for (let s = 0; s < 3; s++) {
      await recorder.record(second(tenants, clock / 1000), [], `trend-${s}`);
      clock += 1000;
    }
    // A reference to an event the ledger does not hold.
    await store.append(ADMISSIONS_STREAM, [
      { type: 'AdmissionsRecorded', data: { keysOf: '00000000-0000-4000-8000-000000000000', at: '0', columns: { fromSecond: String(clock / 1000) } } },
    ]);
    await rebuildProjection(testDb.db, store, admissionTrendsProjection);
    const { rows } = await testDb.db.query<{ tenant_id: string; admitted_units: string; shed_units: string }>(
      `SELECT tenant_id, sum(admitted_units)::text AS admitted_units, sum(shed_units)::text AS shed_units FROM gl_admission_trends_minute WHERE tenant_id LIKE 'trend-%' GROUP BY tenant_id ORDER BY tenant_id`,
    );
    expect(rows).toEqual([
      { tenant_id: 'trend-a', admitted_units: '9', shed_units: '30' },
      { tenant_id: 'trend-b', admitted_units: '12', shed_units: '30' },
    ]);
    const quarantined = await listQuarantine(testDb.db, { projection: admissionTrendsProjection.name });
    expect(quarantined.map((event) => event.reason)).toEqual([expect.stringContaining('not in the ledger')]);
  });
});
