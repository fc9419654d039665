// Checks the time range of a trend read before any SQL runs. Bad input is the caller's mistake, told with
// the field at fault, so the API can answer it as a typed error.
import { DIMENSIONS } from '../../governance/index.ts';
import type { Dimension } from '../../governance/index.ts';
import { BUCKET_SECONDS, TREND_BUCKETS, type TrendBucket } from './buckets.ts';

export class InvalidTrendQuery extends Error {
  override readonly name = 'InvalidTrendQuery';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** At most this many points per answer: a MINUTE trend may span about a month, an HOUR trend ten years. */
export const MAX_TREND_POINTS = 50_000;

export interface TimeRange {
  from: Date;
  to: Date;
}

/** Unix seconds of a valid range; throws InvalidTrendQuery otherwise. */
export function rangeSeconds(range: TimeRange): { fromSecond: number; toSecond: number } {
  const fromMs = range.from instanceof Date ? range.from.getTime() : Number.NaN;
  const toMs = range.to instanceof Date ? range.to.getTime() : Number.NaN;
  if (!Number.isFinite(fromMs)) throw new InvalidTrendQuery('from', 'from must be a valid date');
  if (!Number.isFinite(toMs)) throw new InvalidTrendQuery('to', 'to must be a valid date');
  if (toMs <= fromMs) throw new InvalidTrendQuery('to', 'to must be later than from');
  return { fromSecond: Math.floor(fromMs / 1000), toSecond: Math.ceil(toMs / 1000) };
}

export function checkBucket(bucket: unknown, fromSecond: number, toSecond: number): TrendBucket {
  if (!TREND_BUCKETS.includes(bucket as TrendBucket)) {
    throw new InvalidTrendQuery('bucket', `bucket must be one of ${TREND_BUCKETS.join(', ')}`);
  }
  const points = (toSecond - fromSecond) / BUCKET_SECONDS[bucket as TrendBucket];
  if (points > MAX_TREND_POINTS) {
    throw new InvalidTrendQuery('bucket', `a ${String(bucket)} trend over this range has more than ${MAX_TREND_POINTS} points; use a larger bucket`);
  }
  return bucket as TrendBucket;
}

export function checkFirst(first: unknown, max = 1_000): number {
  if (!Number.isInteger(first) || (first as number) < 1 || (first as number) > max) {
    throw new InvalidTrendQuery('first', `first must be a whole number from 1 to ${max}`);
  }
  return first as number;
}

export function checkText(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new InvalidTrendQuery(field, `${field} must be a non-empty string`);
  return value;
}

export function checkDimension(value: unknown): Dimension {
  if (!DIMENSIONS.includes(value as Dimension)) throw new InvalidTrendQuery('dimension', `dimension must be one of ${DIMENSIONS.join(', ')}`);
  return value as Dimension;
}
