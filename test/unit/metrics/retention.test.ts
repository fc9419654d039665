import { describe, expect, it } from 'vitest';
import { InvalidMetricsSetting, readMetricsSettings } from '../../../src/metrics/metricsSettings.ts';
import { DEFAULT_TREND_RETENTION_DAYS, InvalidTrendRetention, readTrendRetention } from '../../../src/metrics/trends/retention.ts';

describe('readTrendRetention', () => {
  it('keeps a week of minutes, 90 days of hours and two years of days by default', () => {
    expect(readTrendRetention({})).toEqual({ MINUTE: 7, HOUR: 90, DAY: 730 });
    expect(DEFAULT_TREND_RETENTION_DAYS).toEqual({ MINUTE: 7, HOUR: 90, DAY: 730 });
  });

  it('takes whole days from the environment', () => {
    expect(readTrendRetention({ GOVERNANCE_TREND_MINUTES_RETENTION_DAYS: '2', GOVERNANCE_TREND_DAYS_RETENTION_DAYS: ' 365 ' })).toEqual({
      MINUTE: 2,
      HOUR: 90,
      DAY: 365,
    });
  });

  it.each(['0', '-3', '1.5', 'week'])('refuses %j', (text) => {
    expect(() => readTrendRetention({ GOVERNANCE_TREND_HOURS_RETENTION_DAYS: text })).toThrow(InvalidTrendRetention);
  });
});

describe('readMetricsSettings', () => {
  it('names 50 tenants by default and takes another number from the environment', () => {
    expect(readMetricsSettings({}).namedTenants).toBe(50);
    expect(readMetricsSettings({ GOVERNANCE_METRICS_NAMED_TENANTS: '200' }).namedTenants).toBe(200);
  });

  it.each(['-1', 'many', '2.5', '100000'])('refuses %j', (text) => {
    expect(() => readMetricsSettings({ GOVERNANCE_METRICS_NAMED_TENANTS: text })).toThrow(InvalidMetricsSetting);
  });
});
