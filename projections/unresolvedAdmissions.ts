// Read model: units and messages admitted at the platform default because a tenant's ceilings were not
// known, per tenant, dimension and cause, per minute, with hour and day roll-ups.
import type { Tx } from '../src/db/db.ts';
import type { RecordedEvent, Projection, UnresolvedAdmissionsRecordedData } from '../src/ledger/index.ts';
import { entriesOf } from '../src/ledger/index.ts';
import { UNRESOLVED_ADMISSIONS, familyTables, splitAcrossMinutes, upsertRollups, type RollupIncrement, wholeCount } from '../src/metrics/index.ts';

export const unresolvedAdmissionsProjection: Projection = {
  name: 'unresolved-admissions',
  version: 1,
  eventTypes: ['UnresolvedAdmissionsRecorded'],
  tables: familyTables(UNRESOLVED_ADMISSIONS),
  apply: (event: RecordedEvent, tx: Tx) => upsertRollups(tx, UNRESOLVED_ADMISSIONS, incrementsOf(event)),
  // A page's increments in one upsert, merged per row (upsertRollups).
  applyPage: (events: readonly RecordedEvent[], tx: Tx) => upsertRollups(tx, UNRESOLVED_ADMISSIONS, events.flatMap(incrementsOf)),
};

function incrementsOf(event: RecordedEvent): RollupIncrement[] {
  const entries = entriesOf(event.data as UnresolvedAdmissionsRecordedData);
  const increments: RollupIncrement[] = [];
  for (const entry of entries) {
    const counts = { units: wholeCount(entry.units), messages: wholeCount(entry.messages) };
    const keys = { tenant_id: entry.tenantId, dimension: entry.dimension, cause: entry.cause };
    for (const piece of splitAcrossMinutes(entry.fromSecond, wholeCount(entry.seconds), counts)) {
      increments.push({ keys, minuteStart: piece.minuteStart, counts: piece.counts });
    }
  }
  return increments;
}
