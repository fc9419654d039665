// Deletes per-second demand older than its retention, in batches, as the trends are pruned (pruneTrends):
// the service runs it beside them (startDemandPruning), with the minute trends' retention, but never less
// than a preview can reach back (MAX_PREVIEW_DAYS): what a preview of the longest range reads is kept.
import type { Queryable } from '../db/db.ts';
import { startPeriodicPrune, type Pruning } from '../db/periodicPrune.ts';
import { MAX_PREVIEW_DAYS } from './previewLimitChange.ts';

/** Rows deleted per statement: well under a second of work on a loaded server. */
const PRUNE_BATCH_ROWS = 10_000;

/** Days of demand kept for a minute trends' retention of `minuteRetentionDays`. */
export const demandRetentionDays = (minuteRetentionDays: number) => Math.max(minuteRetentionDays, MAX_PREVIEW_DAYS);

export async function pruneDemand(q: Queryable, retentionDays: number, now: Date = new Date()): Promise<number> {
  const cutoff = Math.floor(now.getTime() / 1000) - retentionDays * 86_400;
  let deleted = 0;
  for (;;) {
    const result = await q.query(
      'DELETE FROM gl_demand_seconds WHERE ctid = ANY (ARRAY(SELECT ctid FROM gl_demand_seconds WHERE minute_start < $1 LIMIT $2))',
      [cutoff - (cutoff % 60), PRUNE_BATCH_ROWS],
    );
    deleted += result.rowCount;
    if (result.rowCount < PRUNE_BATCH_ROWS) return deleted;
  }
}

export type DemandPruning = Pruning;

/** Prunes now and then every `intervalMs`; a failed run is reported and retried at the next tick. */
export function startDemandPruning(q: Queryable, retentionDays: number, options: { intervalMs?: number; onError: (error: unknown) => void }): DemandPruning {
  return startPeriodicPrune(() => pruneDemand(q, retentionDays), options);
}
