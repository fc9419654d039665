// The tenants that lost or were refused the most over a range: ordered by limited (shed + rejected) units,
// then limited messages (a refusal on the per-message charge may carry no units), then tenant id so ties
// answer the same way every time.
import type { Queryable } from '../../db/db.ts';
import type { Dimension } from '../../governance/index.ts';
import { ADMISSION_TRENDS } from './rollupFamily.ts';
import { segmentUnion } from './segmentUnion.ts';
import { checkDimension, checkFirst, rangeSeconds } from './trendQuery.ts';

export interface TopSheddersQuery {
  /** All dimensions when absent. */
  dimension?: Dimension;
  from: Date;
  to: Date;
  first: number;
}

export interface TenantShed {
  tenantId: string;
  shed: number;
  rejected: number;
  /** shed + rejected units. */
  limited: number;
  shedMessages: number;
  rejectedMessages: number;
  /** shed + rejected messages (requests). */
  limitedMessages: number;
  hits: number;
}

interface ShedderRow {
  tenant_id: string;
  shed: number;
  rejected: number;
  shed_messages: number;
  rejected_messages: number;
  hits: number;
}

export async function topShedders(q: Queryable, query: TopSheddersQuery): Promise<TenantShed[]> {
  const { fromSecond, toSecond } = rangeSeconds(query);
  const first = checkFirst(query.first);
  const params: unknown[] = [first];
  let filter = '';
  if (query.dimension !== undefined) {
    params.push(checkDimension(query.dimension));
    filter = 'dimension = $2';
  }
  const union = segmentUnion(ADMISSION_TRENDS, fromSecond, toSecond, 'tenant_id, shed_units, rejected_units, shed_messages, rejected_messages, hits', filter, params);
  const result = await q.query<ShedderRow>(
    `SELECT tenant_id, sum(shed_units::float8) AS shed, sum(rejected_units::float8) AS rejected,
            sum(shed_messages::float8) AS shed_messages, sum(rejected_messages::float8) AS rejected_messages, sum(hits::float8) AS hits
       FROM (${union.sql}) AS segments
      GROUP BY tenant_id
     HAVING sum(shed_units::float8) + sum(rejected_units::float8) + sum(shed_messages::float8) + sum(rejected_messages::float8) > 0
      ORDER BY sum(shed_units::float8) + sum(rejected_units::float8) DESC,
               sum(shed_messages::float8) + sum(rejected_messages::float8) DESC, tenant_id
      LIMIT $1`,
    union.params,
  );
  return result.rows.map((row) => ({
    tenantId: row.tenant_id,
    shed: row.shed,
    rejected: row.rejected,
    limited: row.shed + row.rejected,
    shedMessages: row.shed_messages,
    rejectedMessages: row.rejected_messages,
    limitedMessages: row.shed_messages + row.rejected_messages,
    hits: row.hits,
  }));
}
