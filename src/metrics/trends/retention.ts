// How long each bucket size is kept. The defaults keep a week of minutes, a quarter of hours and two
// years of days; the environment may change them (whole days, at least 1).
import type { TrendBucket } from './buckets.ts';

export type TrendRetentionDays = Record<TrendBucket, number>;

export const DEFAULT_TREND_RETENTION_DAYS: TrendRetentionDays = { MINUTE: 7, HOUR: 90, DAY: 730 };

const VARIABLES: Record<TrendBucket, string> = {
  MINUTE: 'GOVERNANCE_TREND_MINUTES_RETENTION_DAYS',
  HOUR: 'GOVERNANCE_TREND_HOURS_RETENTION_DAYS',
  DAY: 'GOVERNANCE_TREND_DAYS_RETENTION_DAYS',
};

export class InvalidTrendRetention extends Error {
  override readonly name = 'InvalidTrendRetention';
}

export function readTrendRetention(env: NodeJS.ProcessEnv = process.env): TrendRetentionDays {
  const retention = { ...DEFAULT_TREND_RETENTION_DAYS };
  for (const bucket of Object.keys(VARIABLES) as TrendBucket[]) {
    const text = env[VARIABLES[bucket]]?.trim();
    if (!text) continue;
    const days = Number(text);
    // A typo must not silently keep nothing (or everything): refuse it at startup.
    if (!Number.isInteger(days) || days < 1) {
      throw new InvalidTrendRetention(`${VARIABLES[bucket]} must be a whole number of days, at least 1 (got ${JSON.stringify(text)})`);
    }
    retention[bucket] = days;
  }
  return retention;
}
