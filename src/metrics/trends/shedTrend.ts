// One tenant's admissions over time for one dimension, summed over its allowances. Buckets without any
// recorded traffic are absent from the answer, unless `fill` asks for every bucket of the range (zeros
// included). `limited` is THE measure of refusals: shed + rejected messages (requests), one per refusal
// whatever it was charged on, so a refusal on the per-message charge (before decoding, no units) counts too;
// `limitedUnits` is shed + rejected units, where the refused units were known.
import type { Queryable } from '../../db/db.ts';
import type { Allowance, Dimension } from '../../governance/index.ts';
import { BUCKET_SECONDS, floorTo, type TrendBucket } from './buckets.ts';
import { bucketRows } from './upsertRollups.ts';
import { ADMISSION_TRENDS } from './rollupFamily.ts';
import { checkBucket, checkDimension, checkText, rangeSeconds } from './trendQuery.ts';

export interface TrendPoint {
  start: Date;
  admitted: number;
  shed: number;
  rejected: number;
  /**
   * Refusals: shed + rejected messages (requests), one per 429 (or 413, 202-dropped) answered or batch
   * dropped, whatever it was charged on. Never 0 when something was refused.
   */
  limited: number;
  /** shed + rejected units: 0 for refusals on the per-message charge, which carry no units. */
  limitedUnits: number;
  admittedMessages: number;
  shedMessages: number;
  rejectedMessages: number;
  /** The same as `limited` (kept for callers that read it by this name). */
  limitedMessages: number;
  /**
   * Charged and then refused for the sender's credential (ingest answered 401): not in `admitted`, not a
   * limit hit. The ingest door charges readings before it checks the key (docs/governance-model.md).
   */
  unauthenticated: number;
  unauthenticatedMessages: number;
  /** Seconds in which a limit was hit, summed over the dimension's allowances. */
  hits: number;
  /** Units a shadow limit (mode SHADOW) would have refused: it refused none of them. */
  shadowLimited: number;
  /** Messages (requests) a shadow limit would have refused. */
  shadowLimitedMessages: number;
  /** Units refused for a period quota (X-RateLimit-Scope: quota): a part of `rejected`. */
  quotaRejected: number;
  /** Messages (requests) refused for a period quota: a part of `rejectedMessages`. */
  quotaRejectedMessages: number;
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
  /** Every bucket of the range, those without traffic as zeros. */
  fill?: boolean | null;
}

interface TrendRow {
  start_second: number;
  admitted: number;
  shed: number;
  rejected: number;
  admitted_messages: number;
  shed_messages: number;
  rejected_messages: number;
  unauthenticated: number;
  unauthenticated_messages: number;
  hits: number;
  shadow_limited: number;
  shadow_limited_messages: number;
  quota_rejected: number;
  quota_rejected_messages: number;
}

export async function shedTrend(q: Queryable, query: ShedTrendQuery): Promise<TrendPoint[]> {
  const tenantId = checkText('tenantId', query.tenantId);
  const dimension = checkDimension(query.dimension);
  const { fromSecond, toSecond } = rangeSeconds(query);
  const bucket = checkBucket(query.bucket, fromSecond, toSecond);
  const result = await q.query<TrendRow>(
    `SELECT extract(epoch FROM bucket_start)::float8 AS start_second,
            sum(admitted_units::float8) AS admitted, sum(shed_units::float8) AS shed,
            sum(rejected_units::float8) AS rejected, sum(admitted_messages::float8) AS admitted_messages,
            sum(shed_messages::float8) AS shed_messages, sum(rejected_messages::float8) AS rejected_messages,
            sum(unauthenticated_units::float8) AS unauthenticated,
            sum(unauthenticated_messages::float8) AS unauthenticated_messages,
            sum(hits::float8) AS hits, sum(shadow_limited_units::float8) AS shadow_limited,
            sum(shadow_limited_messages::float8) AS shadow_limited_messages,
            sum(quota_rejected_units::float8) AS quota_rejected,
            sum(quota_rejected_messages::float8) AS quota_rejected_messages
       FROM ${bucketRows(ADMISSION_TRENDS, bucket, '$1')} AS trends
      WHERE tenant_id = $1 AND dimension = $2 AND ($5::text IS NULL OR allowance = $5)
        AND bucket_start >= to_timestamp($3) AND bucket_start < to_timestamp($4)
      GROUP BY bucket_start
      ORDER BY bucket_start`,
    [tenantId, dimension, floorTo(fromSecond, bucket), toSecond, query.allowance ?? null],
  );
  const points = result.rows.map(
    (row): TrendPoint => ({
      start: new Date(row.start_second * 1000),
      admitted: row.admitted,
      shed: row.shed,
      rejected: row.rejected,
      limited: row.shed_messages + row.rejected_messages,
      limitedUnits: row.shed + row.rejected,
      admittedMessages: row.admitted_messages,
      shedMessages: row.shed_messages,
      rejectedMessages: row.rejected_messages,
      limitedMessages: row.shed_messages + row.rejected_messages,
      unauthenticated: row.unauthenticated,
      unauthenticatedMessages: row.unauthenticated_messages,
      hits: row.hits,
      shadowLimited: row.shadow_limited,
      shadowLimitedMessages: row.shadow_limited_messages,
      quotaRejected: row.quota_rejected,
      quotaRejectedMessages: row.quota_rejected_messages,
    }),
  );
  if (!query.fill) return points;
  const bySecond = new Map(points.map((point) => [point.start.getTime() / 1000, point]));
  const filled: TrendPoint[] = [];
  for (let second = floorTo(fromSecond, bucket); second < toSecond; second += BUCKET_SECONDS[bucket]) {
    filled.push(bySecond.get(second) ?? emptyPoint(second));
  }
  return filled;
}

function emptyPoint(second: number): TrendPoint {
  return {
    start: new Date(second * 1000),
    admitted: 0,
    shed: 0,
    rejected: 0,
    limited: 0,
    limitedUnits: 0,
    admittedMessages: 0,
    shedMessages: 0,
    rejectedMessages: 0,
    limitedMessages: 0,
    unauthenticated: 0,
    unauthenticatedMessages: 0,
    hits: 0,
    shadowLimited: 0,
    shadowLimitedMessages: 0,
    quotaRejected: 0,
    quotaRejectedMessages: 0,
  };
}
