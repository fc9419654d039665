// How much traffic was admitted at the platform default over a range, by dimension and cause: `count` is
// in the dimension's units (readings, actions, requests), `messages` in messages.
import type { Queryable } from '../../db/db.ts';
import type { Dimension, UnresolvedCause } from '../../governance/index.ts';
import { UNRESOLVED_ADMISSIONS } from './rollupFamily.ts';
import { segmentUnion } from './segmentUnion.ts';
import { rangeSeconds, type TimeRange } from './trendQuery.ts';

export interface UnresolvedAdmissionCount {
  dimension: Dimension;
  cause: UnresolvedCause;
  count: number;
  messages: number;
}

interface CountRow {
  dimension: Dimension;
  cause: UnresolvedCause;
  count: number;
  messages: number;
}

export async function unresolvedAdmissions(q: Queryable, query: TimeRange): Promise<UnresolvedAdmissionCount[]> {
  const { fromSecond, toSecond } = rangeSeconds(query);
  const union = segmentUnion(UNRESOLVED_ADMISSIONS, fromSecond, toSecond, 'dimension, cause, units, messages', '', []);
  const result = await q.query<CountRow>(
    `SELECT dimension, cause, sum(units::float8) AS count, sum(messages::float8) AS messages
       FROM (${union.sql}) AS segments
      GROUP BY dimension, cause
      ORDER BY dimension, cause`,
    union.params,
  );
  return result.rows;
}
