// Quota notices: the ledger's QuotaThresholdCrossed events, written once per tenant, dimension, period and
// threshold however many replicas notice the crossing. The quotas themselves are counted by the Governor
// (src/governance, quotaValue.ts and quotaMeter.ts).
export {
  createQuotaNoticeWriter,
  quotaNoticeEvent,
  quotaNoticeEventId,
  QUOTA_NOTICES_STREAM,
  QUOTA_THRESHOLD_CROSSED,
  type QuotaNoticeWriter,
  type QuotaThresholdCrossedData,
} from './quotaNotices.ts';
// Usage per tenant, dimension and period, summed from the ledger's admission summaries.
export { checkUsageQuery, InvalidUsageQuery, MAX_USAGE_DAYS, usage, usageCsv, usageNdjson, USAGE_COLUMNS, type UsageGranularity, type UsageQuery, type UsageRow } from './usage.ts';
// A tenant's quotas now (the console's bars) and the notices recorded for it.
export { quotaNoticesOf, quotaStatus, type QuotaStatus } from './quotaStatus.ts';
// Quotas counted across replicas in the database when there is no Redis (the Governor's quotaBudget).
export { createDatabaseQuotaBudget, InvalidQuotaReservation, type DatabaseQuotaBudgetOptions } from './databaseQuotaBudget.ts';
