// Wraps the projections whose commits subscribers hear about: the limit history (limitChanged) and the
// admission trends (sheds). Wrapping keeps the projections unaware of GraphQL; the runner calls afterCommit
// once their transaction has committed.
import type { Dimension } from '../governance/index.ts';
import type { AdmissionsRecordedData, Projection } from '../ledger/index.ts';
import { eventData, forEachEntry, formatPosition, SummaryKeySources, type RecordedEvent } from '../ledger/index.ts';
import { limitHistoryProjection } from '../../projections/limitHistory.ts';
import { controlPlaneProjections } from '../../projections/controlPlane.ts';
import { admissionTrendsProjection } from '../../projections/admissionTrends.ts';
import type { QuotaThresholdCrossedData } from '../quotas/index.ts';
import { webhookOutboxProjection } from '../webhooks/index.ts';
import type { ApiPubSub } from './pubsub.ts';

function withAfterCommit(projection: Projection, publish: (events: readonly RecordedEvent[]) => void): Projection {
  return {
    ...projection,
    afterCommit(events) {
      projection.afterCommit?.(events);
      publish(events);
    },
  };
}

/** For the limit-history projection: one notice per limit change it committed. */
export function publishingLimitChanges(projection: Projection, pubsub: ApiPubSub): Projection {
  return withAfterCommit(projection, (events) => {
    for (const event of events) {
      const data = event.data as { tenantId?: unknown; tierId?: unknown; dimension?: Dimension };
      pubsub.publish('limitChanged', {
        position: formatPosition(event.position),
        tenantId: typeof data.tenantId === 'string' ? data.tenantId : null,
        // A tenant's own change names its new tier too; it concerns that tenant only.
        tierId: typeof data.tenantId !== 'string' && typeof data.tierId === 'string' ? data.tierId : null,
        dimension: data.dimension ?? null,
      });
    }
  });
}

/**
 * For the admission-trends projection: every summary that shed or refused something (units or messages), on its
 * tenant's topic. A summary written as a reference to keys (src/ledger/catalog/summaryRefs.ts) is published
 * when its source was committed here since the process started, which the Recorder's hourly sources make the
 * rule after the first hour; one whose source this process never saw is not (a live notice, not the record).
 */
export function publishingSheds(projection: Projection, pubsub: ApiPubSub): Projection {
  const keySources = new SummaryKeySources(500_000);
  return withAfterCommit(projection, (events) => {
    for (const event of events) {
      if (event.type !== 'AdmissionsRecorded') continue;
      // Nobody subscribed: nothing to parse but the sources (the events come as JSON text, see below).
      const listening = pubsub.listening('sheds');
      if (!listening && (event.dataJson ?? '').includes('"keysOf"')) continue;
      const stored = eventData(event) as AdmissionsRecordedData;
      keySources.remember(event.id, stored);
      const data = keySources.knownTableOf(stored);
      if (!listening || typeof data === 'string') continue;
      // Most summaries shed nothing: only those that did are copied out (forEachEntry reuses one object). The
      // projection reads its events as JSON text (readsDataAsJson), so each is parsed here once more, while
      // someone subscribes.
      // Refused messages count too: a refusal on the per-message charge carries no units.
      forEachEntry(data, (summary) => {
        if (summary.shedUnits > 0 || summary.rejectedUnits > 0 || summary.shedMessages > 0 || summary.rejectedMessages > 0) {
          pubsub.publish('sheds', summary.tenantId, { ...summary });
        }
      });
    }
  });
}

/** For the webhook outbox: each quota notice it queued, on its tenant's topic. */
function publishingQuotaNotices(projection: Projection, pubsub: ApiPubSub): Projection {
  return withAfterCommit(projection, (events) => {
    for (const event of events) {
      const data = eventData(event) as QuotaThresholdCrossedData;
      if (typeof data?.tenantId === 'string') pubsub.publish('quotaThresholdCrossed', data.tenantId, data);
    }
  });
}

/** For every control-plane projection: a notice that its read model changed (the limits cache listens). */
function publishingCommits(projection: Projection, pubsub: ApiPubSub): Projection {
  return withAfterCommit(projection, () => pubsub.publish('controlPlaneCommitted', projection.name));
}

const CONTROL_PLANE_PROJECTIONS = new Set(controlPlaneProjections().map((projection) => projection.name));

/** The service's projections, wrapped to publish what the API's subscriptions and caches follow. */
export function withApiPublishers(projections: readonly Projection[], pubsub: ApiPubSub): Projection[] {
  return projections.map((projection) => {
    let wrapped = projection;
    if (projection.name === limitHistoryProjection.name) wrapped = publishingLimitChanges(wrapped, pubsub);
    if (projection.name === admissionTrendsProjection.name) wrapped = publishingSheds(wrapped, pubsub);
    if (CONTROL_PLANE_PROJECTIONS.has(projection.name)) wrapped = publishingCommits(wrapped, pubsub);
    if (projection.name === webhookOutboxProjection.name) wrapped = publishingQuotaNotices(wrapped, pubsub);
    return wrapped;
  });
}
