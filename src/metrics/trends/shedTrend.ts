// One tenant's admissions over time for one dimension, summed over its allowances. Buckets without any
// recorded traffic are absent from the answer rather than filled with zeros.
import type { Queryable } from '../../db/db.ts';
import type { Allowance, Dimension } from '../../governance/types.ts';
import { bucketTable, floorTo, type TrendBucket } from './buckets.ts';
import { ADMISSION_TRENDS } from './rollupFamily.ts';
import { checkBucket, checkDimension, checkText, rangeSeconds } from './trendQuery.ts';

export interface TrendPoint {
  start: Date;
  admitted: number;
  shed: number;
  rejected: number;
  /** Seconds in which a limit was hit, summed over the dimension's allowances. */
  hits: number;
}

export interface ShedTrendQuery {
  tenantId: string;
  dimension: Dimension;
  /** The bucket containing `from` is the first point. */
  from: Date;
  /** Exclusive. */
  to: Date;
  bucket: TrendBucket;
  /** Only this allowance; absent or null: summed over the dimension's allowances. */
  allowance?: Allowance | null;
}

interface TrendRow {
  start_second: number;
  admitted: number;
  shed: number;
  rejected: number;
  hits: number;
}

export async function shedTrend(q: Queryable, query: ShedTrendQuery): Promise<TrendPoint[]> {
  const tenantId = checkText('tenantId', query.tenantId);
  const dimension = checkDimension(query.dimension);
  const { fromSecond, toSecond } = rangeSeconds(query);
  const bucket = checkBucket(query.bucket, fromSecond, toSecond);
  const result = await q.query<TrendRow>(
    `SELECT extract(epoch FROM bucket_start)::float8 AS start_second,
            sum(admitted_units::float8) AS admitted, sum(shed_units::float8) AS shed,
            sum(rejected_units::float8) AS rejected, sum(hits::float8) AS hits
       FROM ${bucketTable(ADMISSION_TRENDS.table, bucket)}
      WHERE tenant_id = $1 AND dimension = $2 AND ($5::text IS NULL OR allowance = $5)
        AND bucket_start >= to_timestamp($3) AND bucket_start < to_timestamp($4)
      GROUP BY bucket_start
      ORDER BY bucket_start`,
    [tenantId, dimension, floorTo(fromSecond, bucket), toSecond, query.allowance ?? null],
  );
  return result.rows.map((row) => ({
    start: new Date(row.start_second * 1000),
    admitted: row.admitted,
    shed: row.shed,
    rejected: row.rejected,
    hits: row.hits,
  }));
}
