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
//
// With `referenceKeys` (the PostgreSQL ledger), a summary whose key the Recorder stored within the hour before
// (keySourceIndex.ts) is written as a reference to that event's row instead of a row of its own
// (catalog/summaryRefs.ts): at 50,000 active tenants this cut the ledger's growth about tenfold. A batch
// offered again after a failure is then offered as the same events it was first planned as, even if a
// listing it refers to expired meanwhile. When the ledger refuses a reference for lying in another UTC day
// than its source (ReferenceOutsideDay: a midnight of the ledger's clock passed; nothing of that append is
// stored), the Recorder forgets every listing and plans the batch again, in full.
import { createHash, randomUUID } from 'node:crypto';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import { admissionFieldsFor, ADMISSIONS_STREAM, summaryRow, UNRESOLVED_FIELDS } from './catalog/admissions.ts';
import type { AdmissionsRecordedData, SummaryRefTable, SummaryTable, UnresolvedAdmissionsRecordedData } from './catalog/admissions.ts';
import { COUNT_FIELDS, positionsCodeOf, runLengthCodeOf } from './catalog/summaryRefs.ts';
import { eventBytes, MAX_APPEND_BYTES, splitBySize, startsNewGroup } from './appendSize.ts';
import { isReferable, KeySourceIndex, type KeyPlace } from './keySourceIndex.ts';
import { ReferenceOutsideDay, WrongExpectedRevision, type EventStore, type ExpectedRevision, type NewEvent } from './eventStore.ts';
import { RecordedInPart } from '../governance/index.ts';
import type { AdmissionSummary, Recorder, UnresolvedAdmissionSummary } from '../governance/index.ts';

export interface LedgerRecorderOptions {
  /** Who the events name as actor (the enforcing service). */
  actor?: string;
  maxEntriesPerEvent?: number;
  /**
   * The serialized size each event, and each append, is kept under. Default: events under MAX_APPEND_BYTES on
   * every store, appends under the store's own limit (appendLimitBytes) and under LOOP_APPEND_BYTES: a store
   * without a limit takes most batches in one append.
   */
  maxAppendBytes?: number;
  now?: () => number;
  /**
   * Write summaries whose keys this Recorder stored earlier in the hour as references to them
   * (catalog/summaryRefs.ts). Only for a ledger whose readers can look an event up by id in the read models'
   * database (PostgreSQL, PGlite); off by default.
   */
  referenceKeys?: boolean;
}

/** The events a batch was made into, kept while an append of it has an unknown outcome. */
interface Plan {
  events: AdmissionEvent[];
  eventSizes: number[];
  eventEntries: (readonly AdmissionSummary[] | readonly UnresolvedAdmissionSummary[])[];
  /** Per event: the summaries it lists with their keys, which later events may refer to (null: none). */
  sources: (readonly AdmissionSummary[] | null)[];
  /** The key index's generation when the plan was made: its sources are not registered after a forget. */
  generation: number;
  /** When the plan was made: the listings of its key sources expire within an hour of it. */
  plannedAtMs: number;
}

type AdmissionEvent =
  | NewEvent<'AdmissionsRecorded', AdmissionsRecordedData>
  | NewEvent<'UnresolvedAdmissionsRecorded', UnresolvedAdmissionsRecordedData>;

/** Conflicts with other writers' appends tried through for one append before it fails (and is offered again). */
const MAX_CONFLICTS = 50;

/** Appends whose outcome a failure hid, remembered with the revision they were sent at, at most. */
const MAX_REMEMBERED_ATTEMPTS = 64;

/**
 * How long the Recorder works before it lets the event loop turn. Its work on a batch is cut into slices of
 * about this much, not of a count of entries: on a busy loop every turn also runs every request that arrived
 * meanwhile (20-30 ms at 50,000 active tenants), so a flush cut into slices of 1,000 entries (2-3 ms each)
 * took 20-80 turns and 0.4-2.7 s of wall time for 40-250 ms of its own work, and flush p99 broke 500 ms.
 */
const SLICE_MS = 8;

/** Entries done between two looks at the clock (a look costs about what one entry does). */
const CLOCK_EVERY = 256;

/**
 * The largest append on a store without a limit of its own. An append is serialized in one piece (the
 * adapter's batch text and the driver's encoding of it): a batch of 51,000 summaries written in full (the
 * first of each hour's, at 50,000 active tenants) is 3.5 MB, which held the event loop ~45 ms on the 2-core
 * host, and a batch that had grown behind a slow ledger several times that. Steady batches (references) are
 * far below it: one append.
 */
export const LOOP_APPEND_BYTES = 1024 * 1024;

/** Cuts a run of work into slices of about SLICE_MS: `due` is true when the current one is used up. */
class Slicer {
  private started = performance.now();
  private count = 0;

  /** Counts one unit of work; true when the slice is used up (then call `next`). */
  due(units = 1): boolean {
    this.count += units;
    if (this.count < CLOCK_EVERY) return false;
    this.count = 0;
    return performance.now() - this.started >= SLICE_MS;
  }

  /** Lets the event loop turn, then starts a new slice. */
  async next(): Promise<void> {
    await yieldTurn();
    this.started = performance.now();
    this.count = 0;
  }
}

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
  const { actor = 'governor', maxEntriesPerEvent = 4_000, now = Date.now, referenceKeys = false } = options;
  const keyIndex = referenceKeys ? new KeySourceIndex() : null;
  // Plans of batches whose append failed, by batch id, so an offer again is the same events (with references
  // only: without, a batch makes the same events every time).
  const plans = new Map<string, Plan>();
  const maxEventBytes = options.maxAppendBytes ?? MAX_APPEND_BYTES;
  const maxAppendBytes = options.maxAppendBytes ?? Math.min(store.appendLimitBytes ?? Infinity, LOOP_APPEND_BYTES);
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
        if (error instanceof WrongExpectedRevision || error instanceof ReferenceOutsideDay) {
          // Not stored at `at`, so not stored at all.
          if (firstId !== undefined) sentAt.delete(firstId);
          if (error instanceof ReferenceOutsideDay) throw error;
          // Free to go at the revision the ledger reported.
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
      const slicer = new Slicer();
      const remembered = batchId !== undefined ? plans.get(batchId) : undefined;
      let plan = remembered ?? (await planEvents(admissions, unresolved, batchId, slicer));
      try {
        await appendPlan(plan, batchId, slicer);
      } catch (error) {
        if (!(error instanceof ReferenceOutsideDay)) throw error;
        // Nothing of it was stored, and appendPlan forgot the listings of the day before: planned again, the
        // batch is written in full (no reference can be refused), and a plan kept from an earlier try is dropped.
        if (batchId !== undefined) plans.delete(batchId);
        plan = await planEvents(admissions, unresolved, batchId, slicer);
        await appendPlan(plan, batchId, slicer);
      }
      if (batchId !== undefined) plans.delete(batchId);
    },
    // Nothing of a batch is kept once record() resolved (a plan is kept only for a batch that failed; the key
    // index keeps the keys' strings, not the summaries; the stores serialize events during the append).
    released() {},
  };

  /**
   * Appends a plan's events in appends of at most maxAppendBytes, registering the key sources of each append
   * stored. A failure before any was stored rethrows it (the plan is kept for an offer again under the same
   * batch id, unless the ledger refused a reference: then the caller plans again); after some were stored,
   * RecordedInPart names their summaries. A refused reference means a midnight of the ledger's clock passed
   * since the listings were stored: every one is of the day before, and all are forgotten.
   */
  async function appendPlan(plan: Plan, batchId: string | undefined, slicer: Slicer): Promise<void> {
    const { events, eventSizes, eventEntries } = plan;
    // The events stored so far, by place: their summaries are named (RecordedInPart) only if a later append fails.
    const storedPlaces: number[] = [];
    const places = events.map((_, place) => place);
    for (const append of splitBySize(places, (place) => eventSizes[place]!, maxAppendBytes)) {
      // Each append serializes its events (prepareBatch) in one piece: a slice of its own.
      await slicer.next();
      try {
        await appendAtRevision(append.map((place) => events[place]!));
      } catch (error) {
        const refused = error instanceof ReferenceOutsideDay;
        if (refused) keyIndex?.forget();
        if (keyIndex !== null && batchId !== undefined && storedPlaces.length === 0 && !refused) {
          plans.delete(batchId);
          plans.set(batchId, plan);
          if (plans.size > MAX_REMEMBERED_ATTEMPTS) plans.delete(plans.keys().next().value!);
        }
        if (storedPlaces.length === 0) throw error;
        // The rest is offered under a new batch id, and planned afresh.
        const stored = { admissions: new Set<AdmissionSummary>(), unresolved: new Set<UnresolvedAdmissionSummary>() };
        for (const place of storedPlaces) {
          if (events[place]!.type === 'AdmissionsRecorded') for (const entry of eventEntries[place] as AdmissionSummary[]) stored.admissions.add(entry);
          else for (const entry of eventEntries[place] as UnresolvedAdmissionSummary[]) stored.unresolved.add(entry);
        }
        throw new RecordedInPart(stored.admissions, stored.unresolved, error);
      }
      for (const place of append) {
        const source = plan.sources[place];
        // A batch written in full registers every key (51,000 at 50,000 active tenants, 1-2 µs each): sliced.
        if (keyIndex !== null && source !== null && source !== undefined) {
          keyIndex.register(plan.generation, events[place]!.id!, source, plan.plannedAtMs);
          if (slicer.due(source.length)) await slicer.next();
        }
        storedPlaces.push(place);
      }
    }
  }

  async function planEvents(
    admissions: readonly AdmissionSummary[],
    unresolved: readonly UnresolvedAdmissionSummary[],
    batchId: string | undefined,
    slicer: Slicer,
  ): Promise<Plan> {
    const plannedAtMs = now();
    const metadata = { actor, occurredAt: new Date(plannedAtMs).toISOString() };
    const generation = keyIndex?.advance(plannedAtMs) ?? 0;
    const events: AdmissionEvent[] = [];
    const eventSizes: number[] = [];
    // The summaries each event carries, so a failure part-way can name those stored (RecordedInPart).
    const eventEntries: (readonly AdmissionSummary[] | readonly UnresolvedAdmissionSummary[])[] = [];
    const sources: (readonly AdmissionSummary[] | null)[] = [];
    // Entries are serialized as rows in slices (Slicer), with a turn of the event loop between slices: at
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
        sources.push(keyIndex !== null && type === 'AdmissionsRecorded' ? (groupEntries as readonly AdmissionSummary[]) : null);
        groupStart += groupRows.length;
        groupRows = [];
        groupBytes = 0;
      };
      for (let index = 0; index < entries.length; index++) {
        if (slicer.due()) await slicer.next();
        const json = JSON.stringify(summaryRow(fields, entries[index]!));
        // A row's JSON and the comma after it.
        const bytes = Buffer.byteLength(json, 'utf8') + 1;
        if (startsNewGroup(groupRows.length, groupBytes, bytes, maxRowsBytes, maxEntriesPerEvent)) closeGroup();
        groupRows.push(json);
        groupBytes += bytes;
      }
      closeGroup();
    };
    // References to one source event's rows: positions sorted, the counts as run-length coded columns, in
    // events of at most maxEntriesPerEvent summaries and the event size (halved until they fit).
    const addReferences = (keysOf: string, rows: readonly number[], entries: readonly AdmissionSummary[]) => {
      const order = orderByRow(rows);
      const addChunk = (from: number, to: number) => {
        const chunk = order.slice(from, to);
        // The codes are made from the summaries in place (no array per column: 11 columns of 51,000 a second).
        const data: SummaryRefTable = { keysOf, at: positionsCodeOf(chunk.length, (i) => rows[chunk[i]!]!), columns: {} };
        for (const field of COUNT_FIELDS) data.columns[field] = runLengthCodeOf(chunk.length, (i) => (entries[chunk[i]!]![field] as number | undefined) ?? 0);
        const dataJson = JSON.stringify(data);
        const size = eventBytes({ type: 'AdmissionsRecorded', data: null, metadata }) + Buffer.byteLength(dataJson, 'utf8');
        if (size > maxEventBytes && to - from > 1) {
          const middle = from + Math.floor((to - from) / 2);
          addChunk(from, middle);
          addChunk(middle, to);
          return;
        }
        events.push({ type: 'AdmissionsRecorded', data, dataJson, metadata });
        eventEntries.push(chunk.map((index) => entries[index]!));
        eventSizes.push(size);
        sources.push(null);
      };
      for (let from = 0; from < order.length; from += maxEntriesPerEvent) addChunk(from, Math.min(order.length, from + maxEntriesPerEvent));
    };
    // A summary with an id of its own (a leasing client's, which may come again) is an event of its own whose
    // id follows from it, so the ledger stores it once however often it is sent (PostgreSQL and PGlite skip
    // an event whose id is stored; EventStoreDB only within its cache of recent ids).
    const unnamed = admissions.some((entry) => entry.id !== undefined) ? admissions.filter((entry) => entry.id === undefined) : admissions;
    // Summaries whose keys an event stored this hour lists go as references to it, grouped by that event.
    const bySource = new Map<string, { rows: number[]; entries: AdmissionSummary[] }>();
    const listed: AdmissionSummary[] = [];
    // Summaries come in the order the Governor collected them, much as the source events listed them: the
    // group of the summary before is tried first, without a look-up.
    let lastSource = '';
    let lastGroup: { rows: number[]; entries: AdmissionSummary[] } | undefined;
    for (let index = 0; index < unnamed.length; index++) {
      if (slicer.due()) await slicer.next();
      const entry = unnamed[index]!;
      const place: KeyPlace | undefined = keyIndex?.find(entry);
      // A summary with shadow or quota counts is listed in full: references carry ADMISSION_FIELDS' counts only.
      if (place === undefined || !isReferable(entry)) {
        listed.push(entry);
        continue;
      }
      let group = place.eventId === lastSource ? lastGroup : bySource.get(place.eventId);
      if (group === undefined) bySource.set(place.eventId, (group = { rows: [], entries: [] }));
      lastSource = place.eventId;
      lastGroup = group;
      group.rows.push(place.row);
      group.entries.push(entry);
    }
    for (const [keysOf, group] of bySource) {
      // A group is at most a source event's rows (maxEntriesPerEvent): sorted and coded in one piece.
      if (slicer.due(group.rows.length)) await slicer.next();
      addReferences(keysOf, group.rows, group.entries);
    }
    await addEvents(listed, 'AdmissionsRecorded', admissionFieldsFor(listed));
    await addEvents(unresolved, 'UnresolvedAdmissionsRecorded', UNRESOLVED_FIELDS);
    // Ids follow from the batch id: a batch offered again after a failure that hid a commit is stored once.
    // Without a batch id, the ids are made here all the same: a reference names its source by id.
    events.forEach((event, index) => (event.id = batchId !== undefined ? derivedEventId(batchId, index) : keyIndex !== null ? randomUUID() : undefined));
    if (unnamed !== admissions) {
      for (const entry of admissions) {
        if (entry.id === undefined) continue;
        const before = events.length;
        await addEvents([entry], 'AdmissionsRecorded', admissionFieldsFor([entry]));
        events[before]!.id = summaryEventId(entry.id);
        // Its id is the summary's: it may have been stored before, by another Recorder; no source.
        sources[before] = null;
      }
    }
    return { events, eventSizes, eventEntries, sources, generation, plannedAtMs };
  }
}

/**
 * The places 0..n-1 of `rows` in ascending order of their rows, places of equal rows in their own order (what
 * a stable sort by row gives), by counting: rows are places in one source event, so at most its entries.
 * With a comparator sort (and an array per column), 51,000 references in shuffled order took 72 CPU-ms a flush, now 48.
 */
export function orderByRow(rows: readonly number[]): number[] {
  let max = 0;
  let ascending = true;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (row > max) max = row;
    if (i > 0 && row < rows[i - 1]!) ascending = false;
  }
  const order = new Array<number>(rows.length);
  if (ascending) {
    for (let i = 0; i < rows.length; i++) order[i] = i;
    return order;
  }
  // starts[row]: where the places of that row begin in the order.
  const starts = new Int32Array(max + 2);
  for (let i = 0; i < rows.length; i++) starts[rows[i]! + 1]!++;
  for (let row = 1; row < starts.length; row++) starts[row]! += starts[row - 1]!;
  for (let i = 0; i < rows.length; i++) order[starts[rows[i]!]!++] = i;
  return order;
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
