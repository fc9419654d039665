// Read model: AI inference tokens per tenant per minute, with hour and day roll-ups, so an operator can
// see which tenant spends (beyond the instance-wide counters; docs/governance-model.md, "Observing it").
import type { RecordedEvent, Projection, InferenceSpendRecordedData } from '../src/ledger/index.ts';
import {
  INFERENCE_SPEND,
  familyTables,
  splitAcrossMinutes,
  summariesProblem,
  type RollupIncrement,
  wholeCount,
} from '../src/metrics/index.ts';
import { rollupAppliers } from './rollupAppliers.ts';

export const inferenceSpendProjection: Projection = {
  name: 'inference-spend',
  version: 1,
  eventTypes: ['InferenceSpendRecorded'],
  tables: familyTables(INFERENCE_SPEND),
  // The family's rollups, a page in one upsert; an event outside the summary bounds is refused whole.
  ...rollupAppliers(INFERENCE_SPEND, boundsProblem, incrementsOf),
};

function incrementsOf(event: RecordedEvent): RollupIncrement[] {
  const { entries } = event.data as InferenceSpendRecordedData;
  const increments: RollupIncrement[] = [];
  for (const entry of entries ?? []) {
    const counts = {
      input_tokens: wholeCount(entry.inputTokens),
      output_tokens: wholeCount(entry.outputTokens),
      requests: wholeCount(entry.requests),
    };
    for (const piece of splitAcrossMinutes(entry.fromSecond, wholeCount(entry.seconds), counts)) {
      increments.push({ keys: { tenant_id: entry.tenantId }, minuteStart: piece.minuteStart, counts: piece.counts });
    }
  }
  return increments;
}

/** Why the event's entries lie outside the bounds (summaryBounds.ts), or undefined. */
function boundsProblem(event: RecordedEvent): string | undefined {
  const entries = (event.data as InferenceSpendRecordedData).entries ?? [];
  return summariesProblem(entries.length, (index) => entries[index]!.fromSecond, (index) => entries[index]!.seconds, 'entry');
}
