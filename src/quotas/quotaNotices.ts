// The ledger's record of quota thresholds crossed (QuotaThresholdCrossed on the `quota-notices` stream). The
// Governor notices a crossing synchronously on the admission path (quotaMeter.ts); this writer queues it and
// appends in the background, batched. Every replica that notices the same crossing appends an event of the same
// id (a function of tenant, dimension, period and threshold), and the ledger stores an id once: each threshold
// is recorded once per period per tenant, however many replicas saw it cross.
import type { QuotaThresholdCrossing } from '../governance/index.ts';
import { derivedEventId, type EventStore, type NewEvent } from '../ledger/index.ts';

export const QUOTA_NOTICES_STREAM = 'quota-notices';
export const QUOTA_THRESHOLD_CROSSED = 'QuotaThresholdCrossed';

/** The data of a QuotaThresholdCrossed event. */
export interface QuotaThresholdCrossedData {
  tenantId: string;
  dimension: string;
  thresholdPercent: number;
  period: 'DAY' | 'MONTH';
  periodStart: string;
  periodEnd: string;
  limit: number;
  used: number;
}

/** Crossings queued at most: past it, new ones wait for the next notice of the same threshold on another replica. */
const MAX_QUEUED = 10_000;

export interface QuotaNoticeWriter {
  /** For GovernorOptions.onQuotaThreshold: queues the crossing (allocates one small object, only on a crossing). */
  notice(crossing: QuotaThresholdCrossing): void;
  /** Appends what is queued; resolves when it is stored (or failed: it stays queued for the next flush). */
  flush(): Promise<void>;
  close(): Promise<void>;
  /** Crossings dropped because the queue was full (a long ledger outage). */
  readonly dropped: number;
}

export function quotaNoticeEventId(data: Pick<QuotaThresholdCrossedData, 'tenantId' | 'dimension' | 'periodStart' | 'thresholdPercent'>): string {
  return derivedEventId(`quota-notice:${data.tenantId}:${data.dimension}:${data.periodStart}:${data.thresholdPercent}`, 0);
}

export function quotaNoticeEvent(crossing: QuotaThresholdCrossing): NewEvent<typeof QUOTA_THRESHOLD_CROSSED, QuotaThresholdCrossedData> {
  const data: QuotaThresholdCrossedData = {
    tenantId: crossing.tenantId,
    dimension: crossing.dimension,
    thresholdPercent: crossing.thresholdPercent,
    period: crossing.period,
    periodStart: new Date(crossing.periodStartMs).toISOString(),
    periodEnd: new Date(crossing.periodEndMs).toISOString(),
    limit: crossing.limit,
    used: crossing.used,
  };
  return {
    id: quotaNoticeEventId(data),
    type: QUOTA_THRESHOLD_CROSSED,
    data,
    metadata: { actor: 'governor', occurredAt: new Date().toISOString() },
  };
}

export function createQuotaNoticeWriter(store: EventStore, options: { flushIntervalMs?: number; onError?: (error: unknown) => void } = {}): QuotaNoticeWriter {
  const queued: QuotaThresholdCrossing[] = [];
  let dropped = 0;
  let flushing: Promise<void> | null = null;
  const onError = options.onError ?? (() => {});

  const appendQueued = async () => {
    // One append per notice (a few per tenant and period): an append whose id another replica stored first is
    // answered as stored, which a batch mixing stored and new ids would not be.
    while (queued.length > 0) {
      await store.append(QUOTA_NOTICES_STREAM, [quotaNoticeEvent(queued[0]!)], { expectedRevision: 'any' });
      queued.shift();
    }
  };
  const flush = (): Promise<void> => {
    flushing ??= appendQueued()
      .catch(onError)
      .finally(() => {
        flushing = null;
      });
    return flushing;
  };
  const timer = setInterval(() => {
    if (queued.length > 0) void flush();
  }, options.flushIntervalMs ?? 500);
  timer.unref();

  return {
    notice(crossing) {
      if (queued.length >= MAX_QUEUED) dropped++;
      else {
        queued.push(crossing);
        if (queued.length === 1) queueMicrotask(() => void flush());
      }
    },
    async flush() {
      if (flushing) await flushing;
      await flush();
    },
    async close() {
      clearInterval(timer);
      await this.flush();
    },
    get dropped() {
      return dropped;
    },
  };
}
