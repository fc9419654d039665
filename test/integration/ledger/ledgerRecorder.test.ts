import { expect, it } from 'vitest';
import { describeOnEachStorage, eventStoreForFile } from '../../support/databases.ts';
import type { EventStore, NewEvent } from '../../../src/ledger/eventStore.ts';
import { eventBytes } from '../../../src/ledger/appendSize.ts';
import { ADMISSIONS_STREAM } from '../../../src/ledger/catalog/admissions.ts';
import { ADMISSION_FIELDS, entriesOf, type AdmissionsRecordedData, type UnresolvedAdmissionsRecordedData } from '../../../src/ledger/catalog/admissions.ts';
import { createLedgerRecorder, LOOP_APPEND_BYTES } from '../../../src/ledger/ledgerRecorder.ts';
import { Governor, RecordedInPart, type AdmissionSummary } from '../../../src/governance/index.ts';
import { MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';
import { admissionSummaryReader } from '../../../src/ledger/catalog/summaryRefs.ts';

const T0 = 1_800_000_000_000;

describeOnEachStorage('ledger recorder on $name', (target) => {
  let store: EventStore;

  eventStoreForFile(target, (ledger) => ({ store } = ledger));

  // A summary as the ledger reads it back: the counts recorded since (unauthenticated) present, as 0.
  const summary = (overrides: Partial<AdmissionSummary>) =>
    admissionSummary({ fromSecond: T0 / 1000, unauthenticatedUnits: 0, unauthenticatedMessages: 0, ...overrides });

  async function appendedBy(act: () => Promise<void>) {
    const before = await store.readStream(ADMISSIONS_STREAM);
    await act();
    return (await store.readStream(ADMISSIONS_STREAM)).slice(before.length);
  }

  it('records refusals for a period quota as their own outcome, within rejected, in a table with two more columns', async () => {
    const source = new MemoryLimitSource().tenant('quota', { INGEST: { override: { quota: { period: 'DAY', limit: 3 } } } });
    const clock = T0;
    const governor = new Governor({ limitSource: source, recorder: createLedgerRecorder(store, { actor: 'event-sources', now: () => clock }), now: () => clock });
    governor.learnLimits(source.records.values(), {});
    const outcomes = [2, 2, 1].map((units) => governor.admit({ tenant: 'quota', dimension: 'INGEST', allowance: 'LIVE', units, at: T0 }).quotaExceeded);
    expect(outcomes).toEqual([false, true, false]);
    const events = await appendedBy(() => governor.close());
    expect(events.map((event) => event.type)).toEqual(['AdmissionsRecorded']);
    expect(entriesOf(events[0]!.data as AdmissionsRecordedData)).toEqual([
      summary({ tenantId: 'quota', admittedUnits: 3, admittedMessages: 2, rejectedUnits: 2, rejectedMessages: 1, quotaRejectedUnits: 2, quotaRejectedMessages: 1, hitSeconds: 1 }),
    ]);
  });

  it('appends the Governor summaries as AdmissionsRecorded and UnresolvedAdmissionsRecorded events', async () => {
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { tier: { ratePerSecond: 10, burst: 10 } } });
    let clock = T0;
    const governor = new Governor({
      limitSource: source,
      recorder: createLedgerRecorder(store, { actor: 'event-sources', now: () => clock }),
      now: () => clock,
      clockReadEveryAdmits: 1,
    });
    governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 4, at: T0 });
    await governor.loadsSettled();
    for (let i = 0; i < 12; i++) governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: T0 + 1000 });
    clock = T0 + 2000;
    const events = await appendedBy(() => governor.close());

    expect(events.map((event) => event.type)).toEqual(['AdmissionsRecorded', 'UnresolvedAdmissionsRecorded']);
    expect(events[0]!.metadata).toMatchObject({ actor: 'event-sources', occurredAt: new Date(T0 + 2000).toISOString() });
    // Written as a table: the field names once, a row of values per entry; a summary per second (no summary
    // spans more than the flush interval).
    expect(events[0]!.data).toMatchObject({ fields: ADMISSION_FIELDS, rows: [expect.any(Array), expect.any(Array)] });
    const [first, second] = entriesOf(events[0]!.data as AdmissionsRecordedData);
    expect(first).toMatchObject({ tenantId: 'acme', dimension: 'INGEST', allowance: 'LIVE', fromSecond: T0 / 1000, seconds: 1, admittedUnits: 4, shedUnits: 0, hitSeconds: 0 });
    expect(second).toMatchObject({ tenantId: 'acme', dimension: 'INGEST', allowance: 'LIVE', fromSecond: T0 / 1000 + 1, seconds: 1, admittedUnits: 10, shedUnits: 2, hitSeconds: 1 });
    expect(entriesOf(events[1]!.data as UnresolvedAdmissionsRecordedData)).toEqual([
      expect.objectContaining({ tenantId: 'acme', dimension: 'INGEST', cause: 'pending', units: 4, messages: 1 }),
    ]);
  });

  it('a batch whose append committed but whose acknowledgement was lost is stored once when offered again', async () => {
    // The connection drops after COMMIT: the append is stored, the Recorder is told it failed.
    let loseAcknowledgements = 1;
    const flaky: Pick<EventStore, 'append'> = {
      async append(stream, events, options) {
        const result = await store.append(stream, events, options);
        if (loseAcknowledgements-- > 0) throw new Error('Connection terminated unexpectedly');
        return result;
      },
    };
    const source = new MemoryLimitSource().tenant('lost-ack', { INGEST: { tier: { ratePerSecond: 100, burst: 100 } } });
    let clock = T0;
    const governor = new Governor({ limitSource: source, recorder: createLedgerRecorder(flaky), now: () => clock, flushIntervalMs: 3_600_000 });
    governor.admit({ tenant: 'lost-ack', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: T0 });
    await governor.loadsSettled();
    for (let i = 0; i < 7; i++) governor.admit({ tenant: 'lost-ack', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: T0 + 1000 });
    clock = T0 + 2000;
    const events = await appendedBy(async () => {
      await expect(governor.flush()).rejects.toThrow('Connection terminated unexpectedly');
      // Admitted after the failure: a batch of its own, after the one offered again.
      governor.admit({ tenant: 'lost-ack', dimension: 'INGEST', allowance: 'LIVE', units: 2, at: T0 + 2000 });
      await governor.close();
    });
    const admitted = events
      .filter((event) => event.type === 'AdmissionsRecorded')
      .flatMap(admissionSummaryReader())
      .reduce((sum, entry) => sum + entry.admittedUnits, 0);
    expect(admitted).toBe(10);
  });

  it('appends at explicit revisions, sends a batch whose outcome was hidden again at its first revision, and goes round other writers', async () => {
    // Two Recorders on one stream, as two replicas are. The first one's append commits but its answer is
    // lost; the other appends meanwhile, so the stream has moved on when the batch is offered again.
    const sent: { recorder: string; ids: (string | undefined)[]; expectedRevision: unknown; outcome: string }[] = [];
    let loseAcknowledgements = 0;
    const storeOf = (recorder: string): Pick<EventStore, 'append'> => ({
      async append(stream, events, options) {
        const attempt = { recorder, ids: events.map((event) => event.id), expectedRevision: options?.expectedRevision, outcome: 'stored' };
        sent.push(attempt);
        try {
          const result = await store.append(stream, events, options);
          if (recorder === 'a' && loseAcknowledgements-- > 0) throw new Error('Connection terminated unexpectedly');
          return result;
        } catch (error) {
          attempt.outcome = (error as Error).name;
          throw error;
        }
      },
    });
    const a = createLedgerRecorder(storeOf('a'));
    const b = createLedgerRecorder(storeOf('b'));
    const summary = (tenantId: string, admittedUnits: number) => ({
      tenantId,
      dimension: 'EGRESS' as const,
      allowance: 'DETECTION' as const,
      fromSecond: T0 / 1000,
      seconds: 1,
      admittedUnits,
      admittedMessages: admittedUnits,
      shedUnits: 0,
      shedMessages: 0,
      rejectedUnits: 0,
      rejectedMessages: 0,
      hitSeconds: 0,
    });
    const events = await appendedBy(async () => {
      await b.record([summary('replica-b', 1)], [], 'b-1');
      await a.record([summary('replica-a', 1)], [], 'a-1');
      loseAcknowledgements = 1;
      await expect(a.record([summary('replica-a', 10)], [], 'a-2')).rejects.toThrow('Connection terminated unexpectedly');
      await b.record([summary('replica-b', 2)], [], 'b-2');
      // The Governor offers the failed batch again, unchanged, under its id.
      await a.record([summary('replica-a', 10)], [], 'a-2');
      await a.record([summary('replica-a', 100)], [], 'a-3');
    });
    const admitted = (tenantId: string) =>
      events
        .flatMap(admissionSummaryReader())
        .filter((entry) => entry.tenantId === tenantId)
        .reduce((sum, entry) => sum + entry.admittedUnits, 0);
    expect(admitted('replica-a')).toBe(111);
    expect(admitted('replica-b')).toBe(3);
    expect(events).toHaveLength(5);
    // Never 'any': every append named the revision it expected.
    for (const each of sent) expect(typeof each.expectedRevision === 'bigint' || each.expectedRevision === 'no_stream').toBe(true);
    const [hidden, ...again] = sent.filter((each) => each.recorder === 'a' && each.ids[0] === events[2]!.id);
    expect(hidden!.outcome).toBe('Error');
    expect(again[0]).toMatchObject({ expectedRevision: hidden!.expectedRevision, outcome: 'stored' });
    expect(again).toHaveLength(1);
  });

  it('stores a summary with an id once however often, and by however many recorders (replicas, restarts), it is recorded', async () => {
    const first = createLedgerRecorder(store);
    const replica = createLedgerRecorder(store);
    const leased = summary({ tenantId: 'leased-once', id: '0b6f8a52-1f0c-4a4e-8f9e-6d1a2b3c4d5e', admittedUnits: 7 });
    const other = summary({ tenantId: 'leased-once', id: 'another-summary', fromSecond: T0 / 1000 + 1, admittedUnits: 3 });
    const unnamed = summary({ tenantId: 'governed', admittedUnits: 5 });
    const events = await appendedBy(async () => {
      await first.record([leased], []);
      // Another replica, which never saw it, gets it again with a new summary and one of the Governor's.
      await replica.record([unnamed, leased, other], []);
      await first.record([leased], []);
      await replica.record([other, leased], []);
    });
    const entries = events.flatMap(admissionSummaryReader());
    expect(entries.filter((each) => each.tenantId === 'leased-once').map((each) => each.admittedUnits).sort()).toEqual([3, 7]);
    expect(entries.filter((each) => each.tenantId === 'governed').map((each) => each.admittedUnits)).toEqual([5]);
    // The id is the event's, not a column of the table.
    for (const entry of entries) expect(entry).not.toHaveProperty('id');
  });

  it('splits a large batch into several events of one append, and appends nothing for an empty batch', async () => {
    const recorder = createLedgerRecorder(store, { maxEntriesPerEvent: 2 });
    expect(await appendedBy(() => recorder.record([], []))).toEqual([]);
    const entries = Array.from({ length: 5 }, (_, i) =>
      summary({ tenantId: `t${i}`, dimension: 'EGRESS', allowance: 'DETECTION', admittedUnits: i, admittedMessages: i }),
    );
    const events = await appendedBy(() => recorder.record(entries, []));
    expect(events.map((event) => entriesOf(event.data as AdmissionsRecordedData).length)).toEqual([2, 2, 1]);
    expect(events.flatMap(admissionSummaryReader())).toEqual(entries);
  });

  it("sends a batch in one append where the store has no limit, in appends under the store's limit where it has one", async () => {
    const entries = Array.from({ length: 60 }, (_, i) => summary({ tenantId: `tenant-${i}`, admittedUnits: i, admittedMessages: 1 }));
    const sent = (appendLimitBytes: number | undefined) => {
      const appends: NewEvent[][] = [];
      const counting: Pick<EventStore, 'append' | 'appendLimitBytes'> = {
        appendLimitBytes,
        // Stored appends only: the first goes at 'no_stream' and is refused, the stream being older than this recorder.
        append: async (stream, events, options) => {
          const result = await store.append(stream, events, options);
          appends.push([...events]);
          return result;
        },
      };
      return { appends, recorder: createLedgerRecorder(counting, { maxEntriesPerEvent: 10 }) };
    };
    const unlimited = sent(undefined);
    const events = await appendedBy(() => unlimited.recorder.record(entries, []));
    expect(unlimited.appends.map((append) => append.length)).toEqual([6]);
    // Each event's JSON, written as its rows were sized, is what JSON.stringify makes of its data; stored, it reads back whole.
    for (const event of unlimited.appends[0]!) expect(event.dataJson).toBe(JSON.stringify(event.data));
    expect(events.flatMap(admissionSummaryReader())).toEqual(entries);

    const limited = sent(1_500);
    const stored = await appendedBy(() => limited.recorder.record(entries, []));
    expect(limited.appends.length).toBeGreaterThan(1);
    for (const append of limited.appends) expect(append.reduce((sum, event) => sum + eventBytes(event), 0)).toBeLessThanOrEqual(1_500);
    expect(stored.flatMap(admissionSummaryReader())).toEqual(entries);
  });
  it('keeps each append under LOOP_APPEND_BYTES on a store without a limit, so no append is serialized in one piece of megabytes', async () => {
    // ~70 bytes a row: 20,000 rows are about 1.4 MB, more than one loop-sized append.
    const entries = Array.from({ length: 20_000 }, (_, i) => summary({ tenantId: `loop-${i}`, admittedUnits: i, admittedMessages: 1 }));
    const appends: NewEvent[][] = [];
    const counting: Pick<EventStore, 'append' | 'appendLimitBytes'> = {
      append: async (stream, events, options) => {
        const result = await store.append(stream, events, options);
        appends.push([...events]);
        return result;
      },
    };
    const recorder = createLedgerRecorder(counting);
    const stored = await appendedBy(() => recorder.record(entries, []));
    expect(appends.length).toBeGreaterThan(1);
    for (const append of appends) expect(append.reduce((sum, event) => sum + eventBytes(event), 0)).toBeLessThanOrEqual(LOOP_APPEND_BYTES);
    expect(stored.flatMap(admissionSummaryReader())).toEqual(entries);
  });

  it('names the summaries of the appends stored before one failed (RecordedInPart), and only those', async () => {
    const entries = Array.from({ length: 60 }, (_, i) => summary({ tenantId: `part-${i}`, admittedUnits: i, admittedMessages: 1 }));
    const unresolved = [{ tenantId: 'part-ghost', dimension: 'INGEST' as const, cause: 'unknown-tenant' as const, fromSecond: T0 / 1000, seconds: 1, units: 2, messages: 1 }];
    let appends = 0;
    const storedEvents: NewEvent[] = [];
    const failing: Pick<EventStore, 'append' | 'appendLimitBytes'> = {
      appendLimitBytes: 1_500,
      append: async (stream, events, options) => {
        if (++appends === 3) throw new Error('connection lost');
        const result = await store.append(stream, events, options);
        storedEvents.push(...events);
        return result;
      },
    };
    const recorder = createLedgerRecorder(failing, { maxEntriesPerEvent: 10 });
    const failure = await recorder.record(entries, unresolved).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(RecordedInPart);
    const { admissions, unresolved: unresolvedStored } = failure as RecordedInPart;
    // The appends before the failure (each its own revision: a first refused at 'no_stream' is tried again).
    const storedTenants = storedEvents.flatMap((event) => entriesOf(event.data as AdmissionsRecordedData).map((entry) => entry.tenantId));
    expect(storedTenants.length).toBeGreaterThan(0);
    expect(storedTenants.length).toBeLessThan(entries.length);
    expect([...admissions].map((entry) => entry.tenantId)).toEqual(storedTenants);
    for (const entry of admissions) expect(entries).toContain(entry);
    expect(unresolvedStored.size).toBe(0);
  });
});
