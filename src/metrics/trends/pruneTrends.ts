// Deletes trend rows older than their bucket size's retention, from every trend family. The service runs
// it periodically (startTrendPruning); each run only removes what aged out since the last one.
import type { Queryable } from '../../db/db.ts';
import { BUCKET_SECONDS, bucketTable, floorTo, TREND_BUCKETS } from './buckets.ts';
import type { TrendRetentionDays } from './retention.ts';
import { rolledThrough, ROLLUP_FAMILIES } from './rollupFamily.ts';

export async function pruneTrends(q: Queryable, retention: TrendRetentionDays, now: Date = new Date()): Promise<number> {
  const nowSecond = Math.floor(now.getTime() / 1000);
  let deleted = 0;
  for (const bucket of TREND_BUCKETS) {
    // A bucket is kept while any part of it is within retention.
    const cutoff = floorTo(nowSecond - retention[bucket] * BUCKET_SECONDS.DAY, bucket);
    for (const family of ROLLUP_FAMILIES) {
      // A minute not yet rolled up into its hour and day is kept until it is (upsertRollups).
      const notRolledUp = bucket === 'MINUTE' ? ` AND bucket_start < to_timestamp(${rolledThrough(family)})` : '';
      const result = await q.query(`DELETE FROM ${bucketTable(family.table, bucket)} WHERE bucket_start < to_timestamp($1)${notRolledUp}`, [cutoff]);
      deleted += result.rowCount;
    }
  }
  return deleted;
}

export interface TrendPruning {
  close(): Promise<void>;
}

/** Prunes now and then every `intervalMs`; a failed run is reported and retried at the next tick. */
export function startTrendPruning(
  q: Queryable,
  retention: TrendRetentionDays,
  options: { intervalMs?: number; onError: (error: unknown) => void },
): TrendPruning {
  let running: Promise<unknown> | undefined;
  const run = () => {
    // A slow run (a large first prune) is not overlapped by the next tick.
    if (running) return;
    running = pruneTrends(q, retention)
      .catch(options.onError)
      .finally(() => {
        running = undefined;
      });
  };
  run();
  const timer = setInterval(run, options.intervalMs ?? 10 * 60_000);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await running;
    },
  };
}
