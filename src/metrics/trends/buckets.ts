// Trend buckets are UTC-aligned spans of whole seconds. Every read model keeps one table per bucket size,
// named `<family>_minute`, `<family>_hour`, `<family>_day`.

export const TREND_BUCKETS = ['MINUTE', 'HOUR', 'DAY'] as const;
export type TrendBucket = (typeof TREND_BUCKETS)[number];

export const BUCKET_SECONDS: Record<TrendBucket, number> = { MINUTE: 60, HOUR: 3_600, DAY: 86_400 };

const TABLE_SUFFIX: Record<TrendBucket, string> = { MINUTE: 'minute', HOUR: 'hour', DAY: 'day' };

export function bucketTable(family: string, bucket: TrendBucket): string {
  return `${family}_${TABLE_SUFFIX[bucket]}`;
}

export function floorTo(second: number, bucket: TrendBucket): number {
  const size = BUCKET_SECONDS[bucket];
  return Math.floor(second / size) * size;
}

export function ceilTo(second: number, bucket: TrendBucket): number {
  const size = BUCKET_SECONDS[bucket];
  return Math.ceil(second / size) * size;
}

/** A span [fromSecond, toSecond) answered from one bucket size's table. */
export interface RangeSegment {
  bucket: TrendBucket;
  fromSecond: number;
  toSecond: number;
}

/**
 * Covers [fromSecond, toSecond), widened to whole minutes, with the fewest rows: whole days from the day
 * table, the hours at either edge from the hour table, the minutes at either edge from the minute table.
 * A year-long top-N then reads about 365 + 46 + 118 rows per key instead of 525,600.
 */
export function decomposeRange(fromSecond: number, toSecond: number): RangeSegment[] {
  return cover(floorTo(fromSecond, 'MINUTE'), ceilTo(toSecond, 'MINUTE'), ['DAY', 'HOUR', 'MINUTE']);
}

function cover(from: number, to: number, sizes: readonly TrendBucket[]): RangeSegment[] {
  if (from >= to) return [];
  const [bucket, ...finer] = sizes;
  if (!bucket) return [];
  if (finer.length === 0) return [{ bucket, fromSecond: from, toSecond: to }];
  const start = ceilTo(from, bucket);
  const end = floorTo(to, bucket);
  if (start >= end) return cover(from, to, finer);
  return [...cover(from, start, finer), { bucket, fromSecond: start, toSecond: end }, ...cover(end, to, finer)];
}
