// The Recorder that appends the Governor's summaries to the ledger as AdmissionsRecorded and
// UnresolvedAdmissionsRecorded events. It only uses the EventStore port; the service passes in the store, so
// governance itself does no I/O. A batch is one append (all of it or none), split into events of at most
// `maxEntriesPerEvent` entries so no single event grows with the number of active tenants.
import { ADMISSIONS_STREAM } from '../ledger/catalog/admissions.ts';
import type { AdmissionsRecordedData, UnresolvedAdmissionsRecordedData } from '../ledger/catalog/admissions.ts';
import type { EventStore, NewEvent } from '../ledger/eventStore.ts';
import type { AdmissionSummary, Recorder, UnresolvedAdmissionSummary } from './types.ts';

export interface LedgerRecorderOptions {
  /** Who the events name as actor (the enforcing service). */
  actor?: string;
  maxEntriesPerEvent?: number;
  now?: () => number;
}

type AdmissionEvent =
  | NewEvent<'AdmissionsRecorded', AdmissionsRecordedData>
  | NewEvent<'UnresolvedAdmissionsRecorded', UnresolvedAdmissionsRecordedData>;

export function createLedgerRecorder(store: Pick<EventStore, 'append'>, options: LedgerRecorderOptions = {}): Recorder {
  const { actor = 'governor', maxEntriesPerEvent = 1000, now = Date.now } = options;
  return {
    async record(admissions: readonly AdmissionSummary[], unresolved: readonly UnresolvedAdmissionSummary[]) {
      const metadata = { actor, occurredAt: new Date(now()).toISOString() };
      const events: AdmissionEvent[] = [];
      for (const entries of chunks(admissions, maxEntriesPerEvent)) {
        events.push({ type: 'AdmissionsRecorded', data: { entries }, metadata });
      }
      for (const entries of chunks(unresolved, maxEntriesPerEvent)) {
        events.push({ type: 'UnresolvedAdmissionsRecorded', data: { entries }, metadata });
      }
      if (events.length === 0) return;
      await store.append(ADMISSIONS_STREAM, events, { expectedRevision: 'any' });
    },
  };
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += size) out.push(items.slice(start, start + size));
  return out;
}
