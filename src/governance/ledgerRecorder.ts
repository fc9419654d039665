// The Recorder that appends the Governor's summaries to the ledger as AdmissionsRecorded and
// UnresolvedAdmissionsRecorded events. It only uses the EventStore port; the service passes in the store, so
// governance itself does no I/O. A batch becomes events of at most `maxEntriesPerEvent` entries and at most
// what one append may carry, so no single event grows with the number of active tenants; the events go out in
// appends of at most MAX_APPEND_BYTES each (EventStoreDB refuses larger ones, and the Governor would merge
// every later batch into the refused one). Most batches are one append. When an append fails after earlier
// ones of the batch were stored, RecordedInPart names the summaries stored, and the Governor keeps only the rest.
// A batch offered again after a failure comes with the same batch id, and its events with the same ids, so an
// append whose commit the failure hid is stored once.
import { createHash } from 'node:crypto';
import { ADMISSIONS_STREAM } from '../ledger/catalog/admissions.ts';
import type { AdmissionsRecordedData, UnresolvedAdmissionsRecordedData } from '../ledger/catalog/admissions.ts';
import { jsonBytes, MAX_APPEND_BYTES, maxEventDataBytes, splitAppend, splitBySize } from '../ledger/appendSize.ts';
import type { EventStore, NewEvent } from '../ledger/eventStore.ts';
import { RecordedInPart, type AdmissionSummary, type Recorder, type UnresolvedAdmissionSummary } from './types.ts';

export interface LedgerRecorderOptions {
  /** Who the events name as actor (the enforcing service). */
  actor?: string;
  maxEntriesPerEvent?: number;
  /** The serialized size each append is kept under (MAX_APPEND_BYTES). */
  maxAppendBytes?: number;
  now?: () => number;
}

type AdmissionEvent =
  | NewEvent<'AdmissionsRecorded', AdmissionsRecordedData>
  | NewEvent<'UnresolvedAdmissionsRecorded', UnresolvedAdmissionsRecordedData>;

// `{"entries":[` and `]}` around the entries, and a comma after each.
const ENTRIES_FRAME_BYTES = 16;

export function createLedgerRecorder(store: Pick<EventStore, 'append'>, options: LedgerRecorderOptions = {}): Recorder {
  const { actor = 'governor', maxEntriesPerEvent = 1000, maxAppendBytes = MAX_APPEND_BYTES, now = Date.now } = options;
  return {
    async record(admissions: readonly AdmissionSummary[], unresolved: readonly UnresolvedAdmissionSummary[], batchId?: string) {
      const metadata = { actor, occurredAt: new Date(now()).toISOString() };
      const entryGroups = <Entry>(entries: readonly Entry[], type: AdmissionEvent['type']) =>
        splitBySize(entries, (entry) => jsonBytes(entry) + 1, maxEventDataBytes(metadata, type, maxAppendBytes) - ENTRIES_FRAME_BYTES, maxEntriesPerEvent);
      const events: AdmissionEvent[] = [];
      for (const entries of entryGroups(admissions, 'AdmissionsRecorded')) {
        events.push({ type: 'AdmissionsRecorded', data: { entries }, metadata });
      }
      for (const entries of entryGroups(unresolved, 'UnresolvedAdmissionsRecorded')) {
        events.push({ type: 'UnresolvedAdmissionsRecorded', data: { entries }, metadata });
      }
      // Ids follow from the batch id: a batch offered again after a failure that hid a commit is stored once.
      if (batchId !== undefined) events.forEach((event, index) => (event.id = derivedEventId(batchId, index)));
      const stored = { admissions: new Set<AdmissionSummary>(), unresolved: new Set<UnresolvedAdmissionSummary>() };
      for (const append of splitAppend(events, maxAppendBytes)) {
        try {
          await store.append(ADMISSIONS_STREAM, append, { expectedRevision: 'any' });
        } catch (error) {
          if (stored.admissions.size + stored.unresolved.size === 0) throw error;
          throw new RecordedInPart(stored.admissions, stored.unresolved, error);
        }
        for (const event of append) {
          if (event.type === 'AdmissionsRecorded') for (const entry of event.data.entries) stored.admissions.add(entry);
          else for (const entry of event.data.entries) stored.unresolved.add(entry);
        }
      }
    },
  };
}

/** A UUID (version 8, RFC 9562) that is a function of the batch id and the event's place in the batch. */
export function derivedEventId(batchId: string, index: number): string {
  const bytes = createHash('sha256').update(`${batchId}/${index}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
