// The tenants that lost or were refused the most units over a range: ordered by shed + rejected units,
// then by tenant id so ties answer the same way every time.
import type { Queryable } from '../../db/db.ts';
import type { Dimension } from '../../governance/types.ts';
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
  hits: number;
}

interface ShedderRow {
  tenant_id: string;
  shed: number;
  rejected: number;
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
  const union = segmentUnion(ADMISSION_TRENDS, fromSecond, toSecond, 'tenant_id, shed_units, rejected_units, hits', filter, params);
  const result = await q.query<ShedderRow>(
    `SELECT tenant_id, sum(shed_units::float8) AS shed, sum(rejected_units::float8) AS rejected, sum(hits::float8) AS hits
       FROM (${union.sql}) AS segments
      GROUP BY tenant_id
     HAVING sum(shed_units::float8) + sum(rejected_units::float8) > 0
      ORDER BY sum(shed_units::float8) + sum(rejected_units::float8) DESC, tenant_id
      LIMIT $1`,
    union.params,
  );
  return result.rows.map((row) => ({ tenantId: row.tenant_id, shed: row.shed, rejected: row.rejected, hits: row.hits }));
}
