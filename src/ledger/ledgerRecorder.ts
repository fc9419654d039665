// The Recorder that appends the Governor's summaries to the ledger as AdmissionsRecorded and
// UnresolvedAdmissionsRecorded events. It only uses the EventStore port; the service passes in the store, so
// governance itself does no I/O. A batch becomes events of at most `maxEntriesPerEvent` entries and at most
// what one append may carry, so no single event grows with the number of active tenants; the events go out in
// appends of at most MAX_APPEND_BYTES each (EventStoreDB refuses larger ones, and the Governor would merge
// every later batch into the refused one). Most batches are one append. When an append fails after earlier
// ones of the batch were stored, RecordedInPart names the summaries stored, and the Governor keeps only the rest.
// A batch offered again after a failure comes with the same batch id, and its events with the same ids, so an
// append whose commit the failure hid is stored once: each append goes at an explicit expected revision (with
// 'any' EventStoreDB only checks a cache of recent ids), and an append whose outcome a failure hid is sent
// again at the revision it was first sent at, where both ledgers answer a stored copy as stored. A
// WrongExpectedRevision proves the batch was not stored there (another writer took the revision): it goes
// at the revision the ledger reported.
import { createHash } from 'node:crypto';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import { ADMISSION_FIELDS, ADMISSIONS_STREAM, QUOTA_ADMISSION_FIELDS, summaryRow, UNRESOLVED_FIELDS } from './catalog/admissions.ts';
import type { AdmissionsRecordedData, SummaryTable, UnresolvedAdmissionsRecordedData } from './catalog/admissions.ts';
import { eventBytes, MAX_APPEND_BYTES, splitBySize, startsNewGroup } from './appendSize.ts';
import { WrongExpectedRevision, type EventStore, type ExpectedRevision, type NewEvent } from './eventStore.ts';
import { RecordedInPart } from '../governance/index.ts';
import type { AdmissionSummary, Recorder, UnresolvedAdmissionSummary } from '../governance/index.ts';

export interface LedgerRecorderOptions {
  /** Who the events name as actor (the enforcing service). */
  actor?: string;
  maxEntriesPerEvent?: number;
  /**
   * The serialized size each event, and each append, is kept under. Default: events under MAX_APPEND_BYTES on
   * every store, appends under the store's own limit (appendLimitBytes): a store without one takes a batch in
   * one append.
   */
  maxAppendBytes?: number;
  now?: () => number;
}

type AdmissionEvent =
  | NewEvent<'AdmissionsRecorded', AdmissionsRecordedData>
  | NewEvent<'UnresolvedAdmissionsRecorded', UnresolvedAdmissionsRecordedData>;

/** Conflicts with other writers' appends tried through for one append before it fails (and is offered again). */
const MAX_CONFLICTS = 50;

/** Appends whose outcome a failure hid, remembered with the revision they were sent at, at most. */
const MAX_REMEMBERED_ATTEMPTS = 64;

/** Entries made into rows and sized per turn of the event loop (a few ms of work on one core). */
const SLICE_ENTRIES = 1_000;

/**
 * An event's summary table as the ledger stores it, serialized as its rows were sized (`json`, which a store
 * that sends JSON text takes as it is: NewEvent.dataJson). The rows themselves are made again only when
 * something reads them (a store that serializes data itself, a test): the batch's summaries are kept until
 * the append is answered in any case, and a second copy of every summary as a row, kept as long, was most of
 * what the garbage collector had to move at 50,000 active tenants.
 */
class SummaryTableData<Entry extends object> implements SummaryTable<Entry> {
  private materialized: unknown[][] | null = null;

  constructor(
    readonly fields: readonly (keyof Entry & string)[],
    private readonly entries: readonly Entry[],
  ) {}

  get rows(): unknown[][] {
    return (this.materialized ??= this.entries.map((entry) => summaryRow(this.fields, entry)));
  }

  toJSON(): SummaryTable<Entry> {
    return { fields: this.fields, rows: this.rows };
  }
}

export function createLedgerRecorder(store: Pick<EventStore, 'append' | 'appendLimitBytes'>, options: LedgerRecorderOptions = {}): Recorder {
  const { actor = 'governor', maxEntriesPerEvent = 4_000, now = Date.now } = options;
  const maxEventBytes = options.maxAppendBytes ?? MAX_APPEND_BYTES;
  const maxAppendBytes = options.maxAppendBytes ?? store.appendLimitBytes ?? Infinity;
  // The stream's revision as far as this Recorder knows: learnt from every answer ('no_stream' until the
  // first, which a WrongExpectedRevision corrects at the cost of one refused append).
  let expected: ExpectedRevision = 'no_stream';
  // The revision an append whose outcome a failure hid was sent at, by its first event's id: it is sent
  // there again. Only appends with ids of their own (from a batch id) can be recognised when they come back.
  const sentAt = new Map<string, ExpectedRevision>();

  const appendAtRevision = async (append: AdmissionEvent[]) => {
    const firstId = append[0]!.id;
    let at = (firstId !== undefined ? sentAt.get(firstId) : undefined) ?? expected;
    for (let conflicts = 0; ; conflicts++) {
      try {
        expected = (await store.append(ADMISSIONS_STREAM, append, { expectedRevision: at })).nextRevision;
        if (firstId !== undefined) sentAt.delete(firstId);
        return;
      } catch (error) {
        if (error instanceof WrongExpectedRevision) {
          // Not stored at `at`, so not stored at all: free to go at the revision the ledger reported.
          if (firstId !== undefined) sentAt.delete(firstId);
          expected = at = error.actual;
          if (conflicts < MAX_CONFLICTS) continue;
        } else if (firstId !== undefined) {
          // Stored or not, nobody can tell: the same events go at the same revision next time.
          sentAt.delete(firstId);
          sentAt.set(firstId, at);
          if (sentAt.size > MAX_REMEMBERED_ATTEMPTS) sentAt.delete(sentAt.keys().next().value!);
        }
        throw error;
      }
    }
  };

  return {
    async record(admissions: readonly AdmissionSummary[], unresolved: readonly UnresolvedAdmissionSummary[], batchId?: string) {
      const metadata = { actor, occurredAt: new Date(now()).toISOString() };
      const events: AdmissionEvent[] = [];
      const eventSizes: number[] = [];
      // The summaries each event carries, so a failure part-way can name those stored (RecordedInPart).
      const eventEntries: (readonly AdmissionSummary[] | readonly UnresolvedAdmissionSummary[])[] = [];
      // Entries are serialized as rows SLICE_ENTRIES at a time, with a turn of the event loop between slices: at
      // 50,000 active tenants a batch holds 50,000 entries or more, and doing them in one go held the loop (and
      // every request of the process) for hundreds of milliseconds. Each row is serialized once:
      // its JSON sizes it and becomes part of its event's (SummaryTableData), so appends are cut without
      // serializing again. An event takes the entries in order, up to maxEntriesPerEvent and the event size.
      const addEvents = async <Entry extends object>(entries: readonly Entry[], type: AdmissionEvent['type'], fields: readonly (keyof Entry & string)[]) => {
        if (entries.length === 0) return;
        const frameBytes = eventBytes({ type, data: { fields, rows: [] }, metadata });
        const maxRowsBytes = maxEventBytes - frameBytes;
        const head = `{"fields":${JSON.stringify(fields)},"rows":[`;
        let groupStart = 0;
        let groupRows: string[] = [];
        let groupBytes = 0;
        const closeGroup = () => {
          const groupEntries = entries.slice(groupStart, groupStart + groupRows.length);
          events.push({ type, data: new SummaryTableData(fields, groupEntries), dataJson: `${head}${groupRows.join(',')}]}`, metadata } as AdmissionEvent);
          eventEntries.push(groupEntries as never);
          eventSizes.push(frameBytes + groupBytes);
          groupStart += groupRows.length;
          groupRows = [];
          groupBytes = 0;
        };
        for (let index = 0; index < entries.length; index++) {
          if (index > 0 && index % SLICE_ENTRIES === 0) await yieldTurn();
          const json = JSON.stringify(summaryRow(fields, entries[index]!));
          // A row's JSON and the comma after it.
          const bytes = Buffer.byteLength(json, 'utf8') + 1;
          if (startsNewGroup(groupRows.length, groupBytes, bytes, maxRowsBytes, maxEntriesPerEvent)) closeGroup();
          groupRows.push(json);
          groupBytes += bytes;
        }
        closeGroup();
      };
      // A summary with an id of its own (a leasing client's, which may come again) is an event of its own whose
      // id follows from it, so the ledger stores it once however often it is sent (PostgreSQL and PGlite skip
      // an event whose id is stored; EventStoreDB only within its cache of recent ids).
      const unnamed = admissions.some((entry) => entry.id !== undefined) ? admissions.filter((entry) => entry.id === undefined) : admissions;
      const admissionFields = unnamed.some((entry) => (entry.quotaRejectedMessages ?? 0) > 0) ? QUOTA_ADMISSION_FIELDS : ADMISSION_FIELDS;
      await addEvents(unnamed, 'AdmissionsRecorded', admissionFields);
      await addEvents(unresolved, 'UnresolvedAdmissionsRecorded', UNRESOLVED_FIELDS);
      // Ids follow from the batch id: a batch offered again after a failure that hid a commit is stored once.
      if (batchId !== undefined) events.forEach((event, index) => (event.id = derivedEventId(batchId, index)));
      if (unnamed !== admissions) {
        for (const entry of admissions) {
          if (entry.id === undefined) continue;
          const before = events.length;
          await addEvents([entry], 'AdmissionsRecorded', ADMISSION_FIELDS);
          events[before]!.id = summaryEventId(entry.id);
        }
      }
      const stored = { admissions: new Set<AdmissionSummary>(), unresolved: new Set<UnresolvedAdmissionSummary>() };
      const places = events.map((_, place) => place);
      for (const append of splitBySize(places, (place) => eventSizes[place]!, maxAppendBytes)) {
        // Each append serializes its events (prepareBatch): one turn of the loop per append, not per batch.
        await yieldTurn();
        try {
          await appendAtRevision(append.map((place) => events[place]!));
        } catch (error) {
          if (stored.admissions.size + stored.unresolved.size === 0) throw error;
          throw new RecordedInPart(stored.admissions, stored.unresolved, error);
        }
        for (const place of append) {
          if (events[place]!.type === 'AdmissionsRecorded') for (const entry of eventEntries[place] as AdmissionSummary[]) stored.admissions.add(entry);
          else for (const entry of eventEntries[place] as UnresolvedAdmissionSummary[]) stored.unresolved.add(entry);
        }
      }
    },
  };
}

/** The id of the event that carries a summary with an id of its own (AdmissionSummary.id). */
export function summaryEventId(summaryId: string): string {
  return derivedEventId(`summary:${summaryId}`, 0);
}

/** A UUID (version 8, RFC 9562) that is a function of the batch id and the event's place in the batch. */
export function derivedEventId(batchId: string, index: number): string {
  const bytes = createHash('sha256').update(`${batchId}/${index}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
