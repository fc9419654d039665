import { expect, it } from 'vitest';
import { describeOnEachStorage, eventStoreForFile } from '../../support/databases.ts';
import type { TestDb } from '../../support/databases.ts';
import { ReferenceOutsideDay, type EventStore } from '../../../src/ledger/eventStore.ts';
import { ADMISSIONS_STREAM, entriesOf, type AdmissionsRecordedData } from '../../../src/ledger/catalog/admissions.ts';
import { isSummaryRefTable, SummaryKeySources } from '../../../src/ledger/catalog/summaryRefs.ts';
import { addSummaryDemand, DemandMinutes, EVERY_REPLAYED_SUMMARY } from '../../../src/limit-preview/index.ts';
import { lookUpSummaryEvent } from '../../../src/ledger/postgres/lookUpSummaryEvent.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { rebuildProjection } from '../../../src/ledger/rebuild.ts';
import { appendInTransaction } from '../../../src/ledger/postgres/appendInTransaction.ts';
import { listQuarantine } from '../../../src/ledger/quarantine.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { RecordedInPart, type AdmissionSummary } from '../../../src/governance/index.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';

// The Recorder's clock in these tests (08:00 UTC, 2027-01-15): it plans by it, and listings expire by it; the
// day a reference is recorded in is the database's.
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

  /** Runs `act` with the database's clock, as it stamps recorded_at (and so picks the day partition), a day ahead. */
  async function dayAhead<T>(act: () => Promise<T>): Promise<T> {
    await testDb.db.query(`ALTER TABLE gl_events ALTER COLUMN recorded_at SET DEFAULT clock_timestamp() + interval '1 day'`);
    try {
      return await act();
    } finally {
      await testDb.db.query('ALTER TABLE gl_events ALTER COLUMN recorded_at SET DEFAULT clock_timestamp()');
    }
  }

  /** The stored references whose source lies in another UTC day than they do, or is not held at all. */
  async function referencesOutsideTheirDay(): Promise<string[]> {
    const { rows } = await testDb.db.query<{ event_id: string }>(
      `SELECT r.event_id::text FROM gl_events r
        WHERE r.stream = $1 AND r.data ? 'keysOf' AND NOT EXISTS (
          SELECT 1 FROM gl_events s WHERE s.stream = $1 AND s.event_id::text = r.data->>'keysOf'
             AND (s.recorded_at AT TIME ZONE 'UTC')::date = (r.recorded_at AT TIME ZONE 'UTC')::date)`,
      [ADMISSIONS_STREAM],
    );
    return rows.map((row) => row.event_id);
  }

  it('the ledger refuses a reference recorded in another UTC day than its source, or to an event it does not hold, and stores nothing of that append', async () => {
    const recorder = createLedgerRecorder(store, { referenceKeys: true, now: () => T0 });
    const [source] = await appendedBy(() => recorder.record(second(['day-a'], T0 / 1000), [], 'day-1'));
    const [reference] = await appendedBy(() => recorder.record(second(['day-a'], T0 / 1000 + 1), [], 'day-2'));
    expect((reference!.data as { keysOf: string }).keysOf).toBe(source!.id);
    const refers = (keysOf: string) => ({ type: 'AdmissionsRecorded', data: { ...(reference!.data as object), keysOf } });
    // The same reference a midnight of the database's clock later: refused, and the listing beside it not stored.
    const refused = await appendedBy(() =>
      dayAhead(async () => {
        const error = await store.append(ADMISSIONS_STREAM, [{ type: 'AdmissionsRecorded', data: source!.data }, refers(source!.id)]).catch((caught: unknown) => caught);
        expect(error).toBeInstanceOf(ReferenceOutsideDay);
        expect((error as Error).message).toContain('does not hold in the UTC day it is recorded in');
      }),
    );
    expect(refused).toEqual([]);
    const missing = await store.append(ADMISSIONS_STREAM, [refers('00000000-0000-4000-8000-000000000000')]).catch((caught: unknown) => caught);
    expect(missing).toBeInstanceOf(ReferenceOutsideDay);
    const notAnId = await store.append(ADMISSIONS_STREAM, [refers('day-1')]).catch((caught: unknown) => caught);
    expect(notAnId).toBeInstanceOf(ReferenceOutsideDay);
    expect(await referencesOutsideTheirDay()).toEqual([]);
  });

  it('after a midnight of the database\'s clock, the Recorder writes the refused batch in full once, then refers to the new day\'s listings', async () => {
    let clock = T0 + 5 * 3_600_000;
    const recorder = createLedgerRecorder(store, { referenceKeys: true, now: () => clock });
    const tenants = ['mid-a', 'mid-b', 'mid-c'];
    await recorder.record(second(tenants, clock / 1000), [], 'mid-1');
    clock += 1000;
    const before = await appendedBy(() => recorder.record(second(tenants, clock / 1000), [], 'mid-2'));
    expect(before.every((event) => isSummaryRefTable(event.data))).toBe(true);
    await dayAhead(async () => {
      // The Recorder's clock says nothing of it: its references are refused, and the batch goes in full.
      clock += 1000;
      const batch = second([...tenants, 'mid-d'], clock / 1000);
      const inFull = await appendedBy(() => recorder.record(batch, [], 'mid-3'));
      expect(inFull.some((event) => isSummaryRefTable(event.data))).toBe(false);
      expect((await readBack(inFull)).map((entry) => entry.tenantId).sort()).toEqual(['mid-a', 'mid-b', 'mid-c', 'mid-d']);
      clock += 1000;
      const after = await appendedBy(() => recorder.record(second([...tenants, 'mid-d'], clock / 1000), [], 'mid-4'));
      expect(after.every((event) => isSummaryRefTable(event.data))).toBe(true);
      expect(after.map((event) => (event.data as { keysOf: string }).keysOf).every((id) => inFull.some((event) => event.id === id))).toBe(true);
    });
    expect(await referencesOutsideTheirDay()).toEqual([]);
  });

  it('a batch stored in part before the database\'s midnight names what was stored, and the rest goes in full', async () => {
    let clock = T0 + 6 * 3_600_000;
    let turnAfterFirst = false;
    let appends = 0;
    let refusals = 0;
    // An append per event: the midnight passes between the batch's first append and its second.
    const turning: Pick<EventStore, 'append' | 'appendLimitBytes'> = {
      async append(stream, events, options) {
        const result = await store.append(stream, events, options).catch((error: unknown) => {
          if (error instanceof ReferenceOutsideDay) refusals++;
          throw error;
        });
        if (turnAfterFirst && ++appends === 1) await testDb.db.query(`ALTER TABLE gl_events ALTER COLUMN recorded_at SET DEFAULT clock_timestamp() + interval '1 day'`);
        return result;
      },
    };
    const recorder = createLedgerRecorder(turning, { referenceKeys: true, now: () => clock, maxEntriesPerEvent: 2, maxAppendBytes: 700 });
    const tenants = ['part-a', 'part-b', 'part-c', 'part-d'];
    await recorder.record(second(tenants, clock / 1000), [], 'part-1');
    clock += 1000;
    const batch = second(tenants, clock / 1000);
    try {
      turnAfterFirst = true;
      const error = await recorder.record(batch, [], 'part-2').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(RecordedInPart);
      expect((error as RecordedInPart).cause).toBeInstanceOf(ReferenceOutsideDay);
      const stored = [...(error as RecordedInPart).admissions];
      expect(stored.length).toBeGreaterThan(0);
      expect(stored.length).toBeLessThan(batch.length);
      expect(refusals).toBe(1);
      // The Governor offers the rest under a new batch id: no listing of the day before is referred to, so
      // nothing more is refused.
      const rest = await appendedBy(() => recorder.record(batch.filter((entry) => !stored.includes(entry)), [], 'part-3'));
      expect(rest.some((event) => isSummaryRefTable(event.data))).toBe(false);
      expect(refusals).toBe(1);
      expect([...stored, ...(await readBack(rest))].map((entry) => entry.tenantId).sort()).toEqual(tenants);
    } finally {
      await testDb.db.query('ALTER TABLE gl_events ALTER COLUMN recorded_at SET DEFAULT clock_timestamp()');
    }
    expect(await referencesOutsideTheirDay()).toEqual([]);
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
    // A reference to an event the ledger does not hold: refused since migration 0250, so written as a ledger
    // kept before it could hold one (the database's triggers off for the statement).
    await testDb.db.transaction(async (tx) => {
      await tx.query('SET LOCAL session_replication_role = replica');
      await appendInTransaction(tx, ADMISSIONS_STREAM, [
        { type: 'AdmissionsRecorded', data: { keysOf: '00000000-0000-4000-8000-000000000000', at: '0', columns: { fromSecond: String(clock / 1000) } } },
      ]);
    });
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
