// Usage an operator can bill from: per tenant, dimension and period (DAY or MONTH), the units admitted, shed,
// rejected and rejected for the quota, and the quota's limit, used and left. Summed from the ledger's own
// admission summaries (AdmissionsRecorded), the record of every decision, so an export reconciles with the
// ledger exactly. Periods are those of the tenant's quota when it has one of that period (its time zone and
// reset day), else UTC days or months; a summary (at most a minute long) counts in the period of its first second.
import { DIMENSIONS, quotaPeriodAt, resolveQuota } from '../governance/index.ts';
import type { Dimension, LimitSource, QuotaPeriod, QuotaValue } from '../governance/index.ts';
import { ADMISSIONS_STREAM, eventData, forEachEntry, SummaryKeySources, type AdmissionsRecordedData, type Checkpoint, type EventStore } from '../ledger/index.ts';

export type UsageGranularity = QuotaPeriod;

export interface UsageRow {
  tenantId: string;
  dimension: Dimension;
  periodStart: string;
  periodEnd: string;
  admittedUnits: number;
  shedUnits: number;
  rejectedUnits: number;
  /** Of rejectedUnits, refused for the quota. */
  quotaRejectedUnits: number;
  /** The quota of this period's length in force now; null when the tenant has none. */
  quotaLimit: number | null;
  /** Admitted units count against the quota. */
  quotaUsed: number;
  quotaLeft: number | null;
}

export interface UsageQuery {
  from: Date;
  to: Date;
  granularity: UsageGranularity;
  /** One tenant's usage; every tenant's when absent. */
  tenantId?: string;
}

export class InvalidUsageQuery extends Error {
  override readonly name = 'InvalidUsageQuery';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** The longest range one answer covers. */
export const MAX_USAGE_DAYS = 400;
const PAGE_EVENTS = 500;

export function checkUsageQuery(query: UsageQuery): UsageQuery {
  const fromMs = query.from instanceof Date ? query.from.getTime() : Number.NaN;
  const toMs = query.to instanceof Date ? query.to.getTime() : Number.NaN;
  if (!Number.isFinite(fromMs)) throw new InvalidUsageQuery('from', 'from must be a valid date');
  if (!Number.isFinite(toMs) || toMs <= fromMs) throw new InvalidUsageQuery('to', 'to must be a valid date later than from');
  if (toMs - fromMs > MAX_USAGE_DAYS * 86_400_000) throw new InvalidUsageQuery('to', `a usage answer covers at most ${MAX_USAGE_DAYS} days`);
  if (query.granularity !== 'DAY' && query.granularity !== 'MONTH') throw new InvalidUsageQuery('granularity', 'granularity must be DAY or MONTH');
  return query;
}

const UTC_PERIOD: Record<UsageGranularity, QuotaValue> = {
  DAY: { period: 'DAY', limit: 1, resetDay: 1, timeZone: 'UTC' },
  MONTH: { period: 'MONTH', limit: 1, resetDay: 1, timeZone: 'UTC' },
};

/** The quotas of the tenants named, by tenant and dimension (absent: none). */
async function quotasOf(limits: LimitSource, tenantIds: readonly string[]): Promise<Map<string, QuotaValue>> {
  const [records, platform] = await Promise.all([limits.loadTenants(tenantIds), limits.loadPlatformDefaults()]);
  const quotas = new Map<string, QuotaValue>();
  for (const tenantId of tenantIds) {
    const levels = records.get(tenantId)?.levels ?? {};
    for (const dimension of DIMENSIONS) {
      const own = levels[dimension] ?? {};
      const quota = resolveQuota(dimension, { ...own, platformDefault: own.platformDefault ?? platform[dimension] });
      if (quota) quotas.set(`${tenantId}\u0000${dimension}`, quota.value);
    }
  }
  return quotas;
}

/** Reads every admission summary whose first second lies in [from, to) and sums it per tenant, dimension and period. */
export async function usage(store: EventStore, limits: LimitSource, query: UsageQuery): Promise<UsageRow[]> {
  const { from, to, granularity, tenantId } = checkUsageQuery(query);
  const fromSecond = Math.floor(from.getTime() / 1000);
  const toSecond = Math.ceil(to.getTime() / 1000);
  const sums = new Map<string, { tenantId: string; dimension: Dimension; second: number; admitted: number; shed: number; rejected: number; quota: number }>();
  // Summaries written as references to an earlier event's keys (src/ledger/catalog/summaryRefs.ts) are expanded
  // from it: the read starts at the ledger's start, so every source is read before its references (a day
  // archived takes its sources and references together).
  const keySources = new SummaryKeySources();
  let after: Checkpoint = 'start';
  for (;;) {
    const page = await store.readAllPage(after, PAGE_EVENTS, { types: ['AdmissionsRecorded'] });
    for (const event of page.events) {
      if (event.stream !== ADMISSIONS_STREAM) continue;
      const stored = eventData(event);
      keySources.remember(event.id, stored);
      const data = keySources.knownTableOf(stored);
      if (typeof data === 'string') continue;
      forEachEntry(data as AdmissionsRecordedData, (entry) => {
        if (entry.fromSecond < fromSecond || entry.fromSecond >= toSecond) return;
        if (tenantId !== undefined && entry.tenantId !== tenantId) return;
        const key = `${entry.tenantId}\u0000${entry.dimension}\u0000${entry.fromSecond}`;
        let sum = sums.get(key);
        if (!sum) sums.set(key, (sum = { tenantId: entry.tenantId, dimension: entry.dimension, second: entry.fromSecond, admitted: 0, shed: 0, rejected: 0, quota: 0 }));
        sum.admitted += Number(entry.admittedUnits) || 0;
        sum.shed += Number(entry.shedUnits) || 0;
        sum.rejected += Number(entry.rejectedUnits) || 0;
        sum.quota += Number(entry.quotaRejectedUnits ?? 0) || 0;
      });
    }
    // Done when a page finds nothing and the read could not look further.
    if (page.events.length === 0 && positionText(page.through) === positionText(after)) break;
    after = page.through;
  }
  const tenants = [...new Set([...sums.values()].map((sum) => sum.tenantId))];
  const quotas = tenants.length > 0 ? await quotasOf(limits, tenants) : new Map<string, QuotaValue>();
  const rows = new Map<string, UsageRow>();
  for (const sum of sums.values()) {
    const quota = quotas.get(`${sum.tenantId}\u0000${sum.dimension}`);
    const ofPeriod = quota !== undefined && quota.period === granularity ? quota : undefined;
    const span = quotaPeriodAt(ofPeriod ?? UTC_PERIOD[granularity], sum.second * 1000);
    const key = `${sum.tenantId}\u0000${sum.dimension}\u0000${span.startMs}`;
    let row = rows.get(key);
    if (!row) {
      row = {
        tenantId: sum.tenantId,
        dimension: sum.dimension,
        periodStart: new Date(span.startMs).toISOString(),
        periodEnd: new Date(span.endMs).toISOString(),
        admittedUnits: 0,
        shedUnits: 0,
        rejectedUnits: 0,
        quotaRejectedUnits: 0,
        quotaLimit: ofPeriod?.limit ?? null,
        quotaUsed: 0,
        quotaLeft: null,
      };
      rows.set(key, row);
    }
    row.admittedUnits += sum.admitted;
    row.shedUnits += sum.shed;
    row.rejectedUnits += sum.rejected;
    row.quotaRejectedUnits += sum.quota;
  }
  const out = [...rows.values()];
  for (const row of out) {
    row.quotaUsed = row.admittedUnits;
    row.quotaLeft = row.quotaLimit === null ? null : Math.max(0, row.quotaLimit - row.admittedUnits);
  }
  return out.sort((a, b) => a.tenantId.localeCompare(b.tenantId) || a.dimension.localeCompare(b.dimension) || a.periodStart.localeCompare(b.periodStart));
}

function positionText(checkpoint: Checkpoint): string {
  return checkpoint === 'start' ? 'start' : `${checkpoint.commit}/${checkpoint.prepare}`;
}

export const USAGE_COLUMNS = [
  'tenantId',
  'dimension',
  'periodStart',
  'periodEnd',
  'admittedUnits',
  'shedUnits',
  'rejectedUnits',
  'quotaRejectedUnits',
  'quotaLimit',
  'quotaUsed',
  'quotaLeft',
] as const satisfies readonly (keyof UsageRow)[];

/** CSV (RFC 4180, a header line): tenant ids are plain identifiers, so no value needs quoting. */
export function usageCsv(rows: readonly UsageRow[]): string {
  const lines = [USAGE_COLUMNS.join(',')];
  for (const row of rows) lines.push(USAGE_COLUMNS.map((column) => (row[column] === null ? '' : String(row[column]))).join(','));
  return `${lines.join('\n')}\n`;
}

export function usageNdjson(rows: readonly UsageRow[]): string {
  return rows.map((row) => `${JSON.stringify(row)}\n`).join('');
}
