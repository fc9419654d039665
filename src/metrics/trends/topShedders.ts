// The tenants that lost or were refused the most over a range, ordered by refused messages (requests, the
// `limited` measure: a refusal on the per-message charge carries no units but counts one here) or, with
// orderBy UNITS, by refused units; the other measure breaks ties, then the tenant id, so ties answer the same
// way every time.
import type { Queryable } from '../../db/db.ts';
import type { Dimension } from '../../governance/index.ts';
import { ADMISSION_TRENDS } from './rollupFamily.ts';
import { segmentUnion } from './segmentUnion.ts';
import { checkDimension, checkFirst, InvalidTrendQuery, rangeSeconds } from './trendQuery.ts';

/** What topShedders ranks by: refused messages (requests; the default) or refused units. */
export const SHEDDER_ORDERS = ['MESSAGES', 'UNITS'] as const;
export type ShedderOrder = (typeof SHEDDER_ORDERS)[number];

export interface TopSheddersQuery {
  /** All dimensions when absent. */
  dimension?: Dimension;
  from: Date;
  to: Date;
  first: number;
  /** Default MESSAGES. */
  orderBy?: ShedderOrder | null;
}

export interface TenantShed {
  tenantId: string;
  shed: number;
  rejected: number;
  /** Refusals: shed + rejected messages (requests), whatever they were charged on. */
  limited: number;
  /** shed + rejected units. */
  limitedUnits: number;
  shedMessages: number;
  rejectedMessages: number;
  /** The same as `limited`. */
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
  const orderBy = query.orderBy ?? 'MESSAGES';
  if (!SHEDDER_ORDERS.includes(orderBy)) throw new InvalidTrendQuery('orderBy', `orderBy must be one of ${SHEDDER_ORDERS.join(', ')}`);
  const units = 'sum(shed_units::float8) + sum(rejected_units::float8)';
  const messages = 'sum(shed_messages::float8) + sum(rejected_messages::float8)';
  const order = orderBy === 'UNITS' ? `${units} DESC, ${messages} DESC` : `${messages} DESC, ${units} DESC`;
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
     HAVING ${units} + ${messages} > 0
      ORDER BY ${order}, tenant_id
      LIMIT $1`,
    union.params,
  );
  return result.rows.map((row) => ({
    tenantId: row.tenant_id,
    shed: row.shed,
    rejected: row.rejected,
    limited: row.shed_messages + row.rejected_messages,
    limitedUnits: row.shed + row.rejected,
    shedMessages: row.shed_messages,
    rejectedMessages: row.rejected_messages,
    limitedMessages: row.shed_messages + row.rejected_messages,
    hits: row.hits,
  }));
}
