// The Recorder that feeds the per-tenant and unresolved counters. The Governor hands it per-second
// summaries in batches; it sums each batch per label set first, so prom-client sees one inc per series
// per batch however many decisions the batch stands for.
import type { AdmissionSummary, Recorder, UnresolvedAdmissionSummary } from '../governance/types.ts';
import type { Metrics, TenantSeriesLabels, TenantUnits } from './metrics.ts';

export function createMetricsRecorder(metrics: Metrics): Recorder {
  return {
    async record(admissions: readonly AdmissionSummary[], unresolved: readonly UnresolvedAdmissionSummary[]) {
      for (const entry of admissions) {
        metrics.tenants.observe(entry.tenantId, entry.admittedUnits + entry.shedUnits + entry.rejectedUnits);
      }
      metrics.tenants.refreshIfDue();

      const sums = new Map<string, { labels: TenantSeriesLabels; units: TenantUnits }>();
      for (const entry of admissions) {
        const labels = { dimension: entry.dimension, allowance: entry.allowance ?? '', tenant: metrics.tenants.label(entry.tenantId) };
        const key = `${labels.dimension}\u0000${labels.allowance}\u0000${labels.tenant}`;
        let sum = sums.get(key);
        if (!sum) sums.set(key, (sum = { labels, units: { admitted: 0, shed: 0, rejected: 0, hitSeconds: 0 } }));
        sum.units.admitted += countable(entry.admittedUnits);
        sum.units.shed += countable(entry.shedUnits);
        sum.units.rejected += countable(entry.rejectedUnits);
        sum.units.hitSeconds += countable(entry.hitSeconds);
      }
      for (const { labels, units } of sums.values()) metrics.addTenantUnits(labels, units);

      const unresolvedSums = new Map<string, { dimension: string; cause: string; units: number }>();
      for (const entry of unresolved) {
        const key = `${entry.dimension}\u0000${entry.cause}`;
        let sum = unresolvedSums.get(key);
        if (!sum) unresolvedSums.set(key, (sum = { dimension: entry.dimension, cause: entry.cause, units: 0 }));
        sum.units += countable(entry.units);
      }
      for (const { dimension, cause, units } of unresolvedSums.values()) {
        // inc(0) still creates the series: a rate() over it then reads 0 rather than "no data".
        metrics.unresolvedAdmissions.inc({ dimension, cause }, units);
      }
    },
  };
}

// A counter only goes up; a malformed number from a faulty caller is not allowed to make it throw.
function countable(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}
