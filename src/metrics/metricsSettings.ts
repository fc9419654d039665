// Metrics and trend settings from the environment: how many tenants get a label of their own
// (GOVERNANCE_METRICS_NAMED_TENANTS, default 50), the bearer token /metrics asks for
// (GOVERNANCE_METRICS_TOKEN; unset, /metrics is open as Prometheus endpoints usually are) and how long trend
// buckets are kept (retention.ts).
import { DEFAULT_NAMED_TENANTS } from './metrics.ts';
import { readTrendRetention, type TrendRetentionDays } from './trends/retention.ts';

export interface MetricsSettings {
  namedTenants: number;
  /** Scrapers must send `Authorization: Bearer <token>`: the busiest tenants' names are in the labels. */
  token?: string;
  retention: TrendRetentionDays;
}

export class InvalidMetricsSetting extends Error {
  override readonly name = 'InvalidMetricsSetting';
}

export function readMetricsSettings(env: NodeJS.ProcessEnv = process.env): MetricsSettings {
  const text = env.GOVERNANCE_METRICS_NAMED_TENANTS?.trim();
  const namedTenants = text ? Number(text) : DEFAULT_NAMED_TENANTS;
  if (!Number.isInteger(namedTenants) || namedTenants < 0 || namedTenants > 10_000) {
    throw new InvalidMetricsSetting(`GOVERNANCE_METRICS_NAMED_TENANTS must be a whole number from 0 to 10000 (got ${JSON.stringify(text)})`);
  }
  const token = env.GOVERNANCE_METRICS_TOKEN?.trim() || undefined;
  return { namedTenants, token, retention: readTrendRetention(env) };
}
