// apply, applyPage and afterPages of a trend projection folded with upsertRollups (unresolvedAdmissions.ts,
// inferenceSpend.ts): a page's increments in one upsert, merged per row; an event with a summary outside the
// bounds (summaryBounds.ts) is refused whole, and the runner sets it aside in the quarantine; after the pages,
// the minutes a minute past are rolled up into hours and days (rollUpMinutes).
import type { Tx } from '../src/db/db.ts';
import type { Projection, RecordedEvent, Refusal } from '../src/ledger/index.ts';
import { rollUpMinutes, upsertRollups, type RollupFamily, type RollupIncrement } from '../src/metrics/index.ts';

export function rollupAppliers(
  family: RollupFamily,
  boundsProblem: (event: RecordedEvent) => string | undefined,
  incrementsOf: (event: RecordedEvent) => RollupIncrement[],
): Pick<Projection, 'apply' | 'applyPage' | 'afterPages'> {
  return {
    apply: async (event: RecordedEvent, tx: Tx) => {
      const reason = boundsProblem(event);
      if (reason !== undefined) return { refused: reason };
      await upsertRollups(tx, family, incrementsOf(event));
    },
    applyPage: async (events: readonly RecordedEvent[], tx: Tx) => {
      const refusals: Refusal[] = [];
      const increments: RollupIncrement[] = [];
      for (const event of events) {
        const reason = boundsProblem(event);
        if (reason === undefined) for (const increment of incrementsOf(event)) increments.push(increment);
        else refusals.push({ event, reason });
      }
      await upsertRollups(tx, family, increments);
      return refusals;
    },
    afterPages: async (db) => {
      await rollUpMinutes(db, family);
    },
  };
}
