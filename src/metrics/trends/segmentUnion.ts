// Reads over an arbitrary range answer from the coarsest tables that fit (decomposeRange): one SELECT per
// segment, joined with UNION ALL, so the caller aggregates the union as if it were one table. An hour or day
// segment reads its table and the minutes not yet rolled up into it (bucketRows).
import { decomposeRange } from './buckets.ts';
import { bucketRows } from './upsertRollups.ts';
import type { RollupFamily } from './rollupFamily.ts';

export interface SegmentUnion {
  sql: string;
  params: unknown[];
}

/**
 * `columns` is the select list of each segment, `filter` an extra condition (may use $1..$n of `params`);
 * the segment bounds are appended as further parameters.
 */
export function segmentUnion(
  family: RollupFamily,
  fromSecond: number,
  toSecond: number,
  columns: string,
  filter: string,
  params: readonly unknown[],
): SegmentUnion {
  const all: unknown[] = [...params];
  const selects = decomposeRange(fromSecond, toSecond).map((segment) => {
    all.push(segment.fromSecond, segment.toSecond);
    const from = `$${all.length - 1}`;
    const to = `$${all.length}`;
    return `SELECT ${columns} FROM ${bucketRows(family, segment.bucket)} AS rows
      WHERE bucket_start >= to_timestamp(${from}) AND bucket_start < to_timestamp(${to})${filter ? ` AND ${filter}` : ''}`;
  });
  return { sql: selects.join('\nUNION ALL\n'), params: all };
}
