// Read model: AI inference tokens per tenant per minute, with hour and day roll-ups, so an operator can
// see which tenant spends (beyond the instance-wide counters; docs/governance-model.md, "Observing it").
import type { Tx } from '../src/db/db.ts';
import type { RecordedEvent, Projection, InferenceSpendRecordedData } from '../src/ledger/index.ts';
import { INFERENCE_SPEND, familyTables, splitAcrossMinutes, upsertRollups, type RollupIncrement, wholeCount } from '../src/metrics/index.ts';

export const inferenceSpendProjection: Projection = {
  name: 'inference-spend',
  version: 1,
  eventTypes: ['InferenceSpendRecorded'],
  tables: familyTables(INFERENCE_SPEND),
  apply: (event: RecordedEvent, tx: Tx) => upsertRollups(tx, INFERENCE_SPEND, incrementsOf(event)),
  // A page's increments in one upsert, merged per row (upsertRollups).
  applyPage: (events: readonly RecordedEvent[], tx: Tx) => upsertRollups(tx, INFERENCE_SPEND, events.flatMap(incrementsOf)),
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
