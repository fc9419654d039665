// The Recorder that feeds the per-tenant and unresolved counters. The Governor hands it per-second
// summaries in batches; it sums each batch per label set first, so prom-client sees one inc per series
// per batch however many decisions the batch stands for.
//
// When the ledger refuses a batch, the Governor keeps it and hands the SAME summary objects again at the
// next flush, with newer counts added into them (fanOutRecorder gives both recorders every attempt). So
// this recorder counts only what each summary gained since it last saw it: a unit is counted once
// however many times its batch is retried, and metrics keep counting through a ledger outage.
import type { AdmissionSummary, Recorder, UnresolvedAdmissionSummary } from '../governance/index.ts';
import type { Metrics, TenantSeriesLabels, TenantUnits } from './metrics.ts';

export function createMetricsRecorder(metrics: Metrics): Recorder {
  const counted = new WeakMap<AdmissionSummary, TenantUnits>();
  const countedUnresolved = new WeakMap<UnresolvedAdmissionSummary, number>();
  return {
    async record(admissions: readonly AdmissionSummary[], unresolved: readonly UnresolvedAdmissionSummary[]) {
      const gains = admissions.map((entry) => {
        const now = {
          admitted: countable(entry.admittedUnits),
          shed: countable(entry.shedUnits),
          rejected: countable(entry.rejectedUnits),
          unauthenticated: countable(entry.unauthenticatedUnits ?? 0),
          shedMessages: countable(entry.shedMessages),
          rejectedMessages: countable(entry.rejectedMessages),
          quotaRejected: countable(entry.quotaRejectedUnits ?? 0),
          hitSeconds: countable(entry.hitSeconds),
          shadowLimited: countable(entry.shadowLimitedUnits ?? 0),
          shadowLimitedMessages: countable(entry.shadowLimitedMessages ?? 0),
        };
        const before = counted.get(entry);
        counted.set(entry, now);
        return {
          entry,
          units: before
            ? {
                admitted: gain(now.admitted, before.admitted),
                shed: gain(now.shed, before.shed),
                rejected: gain(now.rejected, before.rejected),
                unauthenticated: gain(now.unauthenticated, before.unauthenticated ?? 0),
                shedMessages: gain(now.shedMessages, before.shedMessages ?? 0),
                rejectedMessages: gain(now.rejectedMessages, before.rejectedMessages ?? 0),
                quotaRejected: gain(now.quotaRejected, before.quotaRejected ?? 0),
                hitSeconds: gain(now.hitSeconds, before.hitSeconds),
                shadowLimited: gain(now.shadowLimited, before.shadowLimited ?? 0),
                shadowLimitedMessages: gain(now.shadowLimitedMessages, before.shadowLimitedMessages ?? 0),
              }
            : now,
        };
      });
      // A tenant's weight for a name of its own is the units it sent plus the messages it had refused: a flood
      // refused on the per-message charge carries no units, and must still earn the tenant its label.
      for (const { entry, units } of gains) {
        metrics.tenants.observe(entry.tenantId, units.admitted + units.shed + units.rejected + units.unauthenticated + units.shedMessages + units.rejectedMessages);
      }
      metrics.tenants.refreshIfDue();

      const sums = new Map<string, { labels: TenantSeriesLabels; units: TenantUnits }>();
      for (const { entry, units } of gains) {
        const labels = { dimension: entry.dimension, allowance: entry.allowance ?? '', tenant: metrics.tenants.label(entry.tenantId) };
        const key = `${labels.dimension}\u0000${labels.allowance}\u0000${labels.tenant}`;
        let sum = sums.get(key);
        if (!sum) sums.set(key, (sum = { labels, units: { admitted: 0, shed: 0, rejected: 0, unauthenticated: 0, shedMessages: 0, rejectedMessages: 0, quotaRejected: 0, hitSeconds: 0, shadowLimited: 0, shadowLimitedMessages: 0 } }));
        sum.units.admitted += units.admitted;
        sum.units.unauthenticated! += units.unauthenticated;
        sum.units.shed += units.shed;
        sum.units.rejected += units.rejected;
        sum.units.shedMessages! += units.shedMessages;
        sum.units.rejectedMessages! += units.rejectedMessages;
        sum.units.quotaRejected! += units.quotaRejected;
        sum.units.hitSeconds += units.hitSeconds;
        sum.units.shadowLimited! += units.shadowLimited;
        sum.units.shadowLimitedMessages! += units.shadowLimitedMessages;
      }
      for (const { labels, units } of sums.values()) metrics.addTenantUnits(labels, units);

      const unresolvedSums = new Map<string, { dimension: string; cause: string; units: number }>();
      for (const entry of unresolved) {
        const key = `${entry.dimension}\u0000${entry.cause}`;
        let sum = unresolvedSums.get(key);
        if (!sum) unresolvedSums.set(key, (sum = { dimension: entry.dimension, cause: entry.cause, units: 0 }));
        const now = countable(entry.units);
        sum.units += gain(now, countedUnresolved.get(entry) ?? 0);
        countedUnresolved.set(entry, now);
      }
      for (const { dimension, cause, units } of unresolvedSums.values()) {
        // inc(0) still creates the series: a rate() over it then reads 0 rather than "no data".
        metrics.unresolvedAdmissions.inc({ dimension, cause }, units);
      }
    },
    // The batch was taken: its summaries are never offered again as they are, and the Governor may make the
    // same objects into later summaries, whose counts are all new.
    released(admissions: readonly AdmissionSummary[]) {
      for (const entry of admissions) counted.delete(entry);
    },
  };
}

function gain(now: number, before: number): number {
  return now > before ? now - before : 0;
}

// A counter only goes up; a malformed number from a faulty caller is not allowed to make it throw.
function countable(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}
