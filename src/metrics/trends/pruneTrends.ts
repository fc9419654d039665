// Deletes trend rows older than their bucket size's retention, from every trend family. The service runs
// it periodically (startTrendPruning); each run only removes what aged out since the last one.
import type { Queryable } from '../../db/db.ts';
import { startPeriodicPrune, type Pruning } from '../../db/periodicPrune.ts';
import { BUCKET_SECONDS, bucketTable, floorTo, TREND_BUCKETS } from './buckets.ts';
import type { TrendRetentionDays } from './retention.ts';
import { rolledThrough, ROLLUP_FAMILIES } from './rollupFamily.ts';

/** Rows deleted per statement: well under a second of work on a loaded server. */
export const PRUNE_BATCH_ROWS = 10_000;

export async function pruneTrends(q: Queryable, retention: TrendRetentionDays, now: Date = new Date()): Promise<number> {
  const nowSecond = Math.floor(now.getTime() / 1000);
  let deleted = 0;
  for (const bucket of TREND_BUCKETS) {
    // A bucket is kept while any part of it is within retention.
    const cutoff = floorTo(nowSecond - retention[bucket] * BUCKET_SECONDS.DAY, bucket);
    for (const family of ROLLUP_FAMILIES) {
      // A minute not yet rolled up into its hour and day is kept until it is (upsertRollups).
      const notRolledUp = bucket === 'MINUTE' ? ` AND bucket_start < to_timestamp(${rolledThrough(family)})` : '';
      const table = bucketTable(family.table, bucket);
      // A batch at a time: a day of 50,000 tenants' minutes is tens of millions of rows, one DELETE of which
      // outlasts the pool's 30 s query timeout (QUERY_TIMEOUT_MS), rolls back and fails again every run while
      // the table grows. Each batch is found through the table's bucket_start index.
      for (;;) {
        const result = await q.query(
          `DELETE FROM ${table} WHERE ctid = ANY (ARRAY(SELECT ctid FROM ${table} WHERE bucket_start < to_timestamp($1)${notRolledUp} LIMIT $2))`,
          [cutoff, PRUNE_BATCH_ROWS],
        );
        deleted += result.rowCount;
        if (result.rowCount < PRUNE_BATCH_ROWS) break;
      }
    }
  }
  return deleted;
}

export type TrendPruning = Pruning;

/** Prunes now and then every `intervalMs`; a failed run is reported and retried at the next tick. */
export function startTrendPruning(
  q: Queryable,
  retention: TrendRetentionDays,
  options: { intervalMs?: number; onError: (error: unknown) => void },
): TrendPruning {
  return startPeriodicPrune(() => pruneTrends(q, retention), options);
}
