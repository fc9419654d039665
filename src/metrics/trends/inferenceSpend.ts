// Per-tenant AI inference spend: one tenant's tokens over time, and the tenants that spent the most.
import type { Queryable } from '../../db/db.ts';
import { floorTo, type TrendBucket } from './buckets.ts';
import { bucketRows } from './upsertRollups.ts';
import { INFERENCE_SPEND } from './rollupFamily.ts';
import { segmentUnion } from './segmentUnion.ts';
import { checkBucket, checkFirst, checkText, rangeSeconds, type TimeRange } from './trendQuery.ts';

export interface InferenceSpendPoint {
  start: Date;
  inputTokens: number;
  outputTokens: number;
  requests: number;
}

export interface TenantInferenceSpend {
  tenantId: string;
  inputTokens: number;
  outputTokens: number;
  requests: number;
}

interface SpendRow {
  start_second: number;
  tenant_id: string;
  input_tokens: number;
  output_tokens: number;
  requests: number;
}

export async function inferenceSpendTrend(
  q: Queryable,
  query: TimeRange & { tenantId: string; bucket: TrendBucket },
): Promise<InferenceSpendPoint[]> {
  const tenantId = checkText('tenantId', query.tenantId);
  const { fromSecond, toSecond } = rangeSeconds(query);
  const bucket = checkBucket(query.bucket, fromSecond, toSecond);
  const result = await q.query<SpendRow>(
    `SELECT extract(epoch FROM bucket_start)::float8 AS start_second, sum(input_tokens::float8) AS input_tokens,
            sum(output_tokens::float8) AS output_tokens, sum(requests::float8) AS requests
       FROM ${bucketRows(INFERENCE_SPEND, bucket)} AS spend
      WHERE tenant_id = $1 AND bucket_start >= to_timestamp($2) AND bucket_start < to_timestamp($3)
      GROUP BY bucket_start
      ORDER BY bucket_start`,
    [tenantId, floorTo(fromSecond, bucket), toSecond],
  );
  return result.rows.map((row) => ({
    start: new Date(row.start_second * 1000),
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    requests: row.requests,
  }));
}

/** Ordered by input + output tokens, then tenant id. */
export async function topInferenceSpenders(q: Queryable, query: TimeRange & { first: number }): Promise<TenantInferenceSpend[]> {
  const { fromSecond, toSecond } = rangeSeconds(query);
  const first = checkFirst(query.first);
  const union = segmentUnion(INFERENCE_SPEND, fromSecond, toSecond, 'tenant_id, input_tokens, output_tokens, requests', '', [first]);
  const result = await q.query<SpendRow>(
    `SELECT tenant_id, sum(input_tokens::float8) AS input_tokens, sum(output_tokens::float8) AS output_tokens,
            sum(requests::float8) AS requests
       FROM (${union.sql}) AS segments
      GROUP BY tenant_id
      ORDER BY sum(input_tokens::float8) + sum(output_tokens::float8) DESC, tenant_id
      LIMIT $1`,
    union.params,
  );
  return result.rows.map((row) => ({
    tenantId: row.tenant_id,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    requests: row.requests,
  }));
}
