// Read model: admitted, shed, rejected and unauthenticated units and messages and limit hits per tenant, dimension and
// allowance, per minute, with hour and day roll-ups. A summary covering several seconds is split across the
// minutes it crosses in proportion to its seconds in each (splitAcrossMinutes).
import type { Tx } from '../src/db/db.ts';
import type { RecordedEvent, Projection, AdmissionsRecordedData } from '../src/ledger/index.ts';
import { entriesOf } from '../src/ledger/index.ts';
import { ADMISSION_TRENDS, familyTables, splitAcrossMinutes, upsertRollups, type RollupIncrement, wholeCount } from '../src/metrics/index.ts';

export const admissionTrendsProjection: Projection = {
  name: 'admission-trends',
  version: 1,
  eventTypes: ['AdmissionsRecorded'],
  tables: familyTables(ADMISSION_TRENDS),
  apply: (event: RecordedEvent, tx: Tx) => upsertRollups(tx, ADMISSION_TRENDS, incrementsOf(event)),
  // A page's increments in one upsert, merged per row (upsertRollups).
  applyPage: (events: readonly RecordedEvent[], tx: Tx) => upsertRollups(tx, ADMISSION_TRENDS, events.flatMap(incrementsOf)),
};

function incrementsOf(event: RecordedEvent): RollupIncrement[] {
  const entries = entriesOf(event.data as AdmissionsRecordedData);
  const increments: RollupIncrement[] = [];
  for (const entry of entries) {
    const counts = {
      admitted_units: wholeCount(entry.admittedUnits),
      admitted_messages: wholeCount(entry.admittedMessages),
      shed_units: wholeCount(entry.shedUnits),
      shed_messages: wholeCount(entry.shedMessages),
      rejected_units: wholeCount(entry.rejectedUnits),
      rejected_messages: wholeCount(entry.rejectedMessages),
      unauthenticated_units: wholeCount(entry.unauthenticatedUnits),
      unauthenticated_messages: wholeCount(entry.unauthenticatedMessages),
      hits: Math.min(wholeCount(entry.hitSeconds), Math.max(1, wholeCount(entry.seconds))),
    };
    const keys = { tenant_id: entry.tenantId, dimension: entry.dimension, allowance: entry.allowance ?? '' };
    for (const piece of splitAcrossMinutes(entry.fromSecond, wholeCount(entry.seconds), counts)) {
      increments.push({ keys, minuteStart: piece.minuteStart, counts: piece.counts });
    }
  }
  return increments;
}
