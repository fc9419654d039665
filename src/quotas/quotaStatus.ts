// A tenant's quotas as they stand: per dimension with a quota, the quota, the level it comes from, the current
// period and what is used of it (from the ledger's summaries, as usage reads them), and the notices recorded.
import { DIMENSIONS, quotaPeriodAt, resolveQuota } from '../governance/index.ts';
import type { Dimension, LimitSource, LimitSourceLevel, QuotaValue } from '../governance/index.ts';
import type { EventStore } from '../ledger/index.ts';
import { QUOTA_NOTICES_STREAM, QUOTA_THRESHOLD_CROSSED, type QuotaThresholdCrossedData } from './quotaNotices.ts';
import { usage } from './usage.ts';

export interface QuotaStatus {
  dimension: Dimension;
  quota: QuotaValue;
  source: LimitSourceLevel;
  periodStart: string;
  periodEnd: string;
  used: number;
}

export async function quotaStatus(store: EventStore, limits: LimitSource, tenantId: string, now = new Date()): Promise<QuotaStatus[]> {
  const [records, platform] = await Promise.all([limits.loadTenants([tenantId]), limits.loadPlatformDefaults()]);
  const levels = records.get(tenantId)?.levels ?? {};
  const statuses: QuotaStatus[] = [];
  for (const dimension of DIMENSIONS) {
    const own = levels[dimension] ?? {};
    const resolved = resolveQuota(dimension, { ...own, platformDefault: own.platformDefault ?? platform[dimension] });
    if (!resolved) continue;
    const span = quotaPeriodAt(resolved.value, now.getTime());
    statuses.push({
      dimension,
      quota: resolved.value,
      source: resolved.source,
      periodStart: new Date(span.startMs).toISOString(),
      periodEnd: new Date(span.endMs).toISOString(),
      used: 0,
    });
  }
  if (statuses.length === 0) return statuses;
  const earliest = Math.min(...statuses.map((status) => Date.parse(status.periodStart)));
  const rows = await usage(store, limits, { tenantId, from: new Date(earliest), to: new Date(now.getTime() + 1000), granularity: 'DAY' });
  for (const status of statuses) {
    const start = Date.parse(status.periodStart);
    const end = Date.parse(status.periodEnd);
    status.used = rows
      .filter((row) => row.dimension === status.dimension && Date.parse(row.periodStart) >= start && Date.parse(row.periodStart) < end)
      .reduce((sum, row) => sum + row.admittedUnits, 0);
  }
  return statuses;
}

/** The newest notices recorded for a tenant (at most `first`, 1 to 200), among the last 5,000 of every tenant. */
export async function quotaNoticesOf(store: EventStore, tenantId: string, first = 50): Promise<QuotaThresholdCrossedData[]> {
  const events = await store.readStream(QUOTA_NOTICES_STREAM, { direction: 'backwards', fromRevision: 'end', maxCount: 5_000 });
  const notices: QuotaThresholdCrossedData[] = [];
  const most = Math.max(1, Math.min(200, Math.floor(first)));
  for (const event of events) {
    if (event.type !== QUOTA_THRESHOLD_CROSSED) continue;
    const data = event.data as QuotaThresholdCrossedData;
    if (data?.tenantId === tenantId) notices.push(data);
    if (notices.length >= most) break;
  }
  return notices;
}
