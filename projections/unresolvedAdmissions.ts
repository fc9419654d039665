// Read model: units and messages admitted at the platform default because a tenant's ceilings were not
// known, per tenant, dimension and cause, per minute, with hour and day roll-ups.
import type { RecordedEvent, Projection, UnresolvedAdmissionsRecordedData } from '../src/ledger/index.ts';
import { entriesOf } from '../src/ledger/index.ts';
import {
  UNRESOLVED_ADMISSIONS,
  familyTables,
  splitAcrossMinutes,
  summariesProblem,
  type RollupIncrement,
  wholeCount,
} from '../src/metrics/index.ts';
import { rollupAppliers } from './rollupAppliers.ts';

export const unresolvedAdmissionsProjection: Projection = {
  name: 'unresolved-admissions',
  version: 1,
  eventTypes: ['UnresolvedAdmissionsRecorded'],
  tables: familyTables(UNRESOLVED_ADMISSIONS),
  // The family's rollups, a page in one upsert; an event outside the summary bounds is refused whole.
  ...rollupAppliers(UNRESOLVED_ADMISSIONS, boundsProblem, incrementsOf),
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

/** Why the event's summaries lie outside the bounds (summaryBounds.ts), or undefined. */
function boundsProblem(event: RecordedEvent): string | undefined {
  const entries = entriesOf(event.data as UnresolvedAdmissionsRecordedData);
  return summariesProblem(entries.length, (index) => entries[index]!.fromSecond, (index) => entries[index]!.seconds);
}
