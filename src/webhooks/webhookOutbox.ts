// The outbox, filled from the ledger: a projection of QuotaThresholdCrossed that adds one delivery per webhook
// that asked for it (the tenant's own and the platform-wide ones) in the same transaction that moves its
// checkpoint. A restart resumes from the checkpoint, so no notice is lost and none is queued twice.
import type { Tx } from '../db/index.ts';
import { eventData, type Projection, type RecordedEvent } from '../ledger/index.ts';

/** What a receiver gets: the ledger event's id (the idempotency id), its type, when, and its data. */
export function deliveryBody(event: RecordedEvent): string {
  return JSON.stringify({ id: event.id, type: event.type, occurredAt: event.recordedAt.toISOString(), data: eventData(event) });
}

export const webhookOutboxProjection: Projection = {
  name: 'webhook-outbox',
  version: 1,
  eventTypes: ['QuotaThresholdCrossed'],
  // The registrations are not the projection's (a rebuild must not drop them); its deliveries are.
  tables: ['gl_webhook_deliveries'],
  async apply(recorded: RecordedEvent, tx: Tx) {
    const data = eventData(recorded) as { tenantId?: unknown } | null;
    const tenantId = typeof data?.tenantId === 'string' ? data.tenantId : null;
    await tx.query(
      `INSERT INTO gl_webhook_deliveries (webhook_id, event_id, event_type, tenant_id, body, next_attempt_at, created_at)
       SELECT webhook_id, $1, $2, $3, $4, $5, $5 FROM gl_webhooks
        WHERE (tenant_id IS NULL OR tenant_id = $3) AND events ? $2
       ON CONFLICT (webhook_id, event_id) DO NOTHING`,
      [recorded.id, recorded.type, tenantId, deliveryBody(recorded), recorded.recordedAt],
    );
  },
};
