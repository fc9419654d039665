// The read side: webhooks (never their secrets) and each one's delivery log, newest first.
import type { Queryable } from '../db/index.ts';

export interface WebhookDeliveryRecord {
  eventId: string;
  eventType: string;
  tenantId: string | null;
  status: 'PENDING' | 'DELIVERED' | 'FAILED';
  attempts: number;
  lastAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

export interface WebhookRecord {
  webhookId: string;
  tenantId: string | null;
  url: string;
  events: string[];
  createdAt: Date;
}

/** Webhooks, a tenant's own and the platform-wide ones when `tenantId` is given, else all. */
export async function listWebhooks(db: Queryable, tenantId?: string): Promise<WebhookRecord[]> {
  const { rows } = await db.query<{ webhook_id: string; tenant_id: string | null; url: string; events: string[] | string; created_at: Date }>(
    `SELECT webhook_id, tenant_id, url, events, created_at FROM gl_webhooks
      WHERE $1::text IS NULL OR tenant_id IS NULL OR tenant_id = $1 ORDER BY created_at, webhook_id LIMIT 1000`,
    [tenantId ?? null],
  );
  return rows.map((row) => ({
    webhookId: row.webhook_id,
    tenantId: row.tenant_id,
    url: row.url,
    events: typeof row.events === 'string' ? (JSON.parse(row.events) as string[]) : row.events,
    createdAt: new Date(row.created_at),
  }));
}

/** The newest `limit` (at most 500) deliveries of one webhook. */
export async function webhookDeliveries(db: Queryable, webhookId: string, limit = 100): Promise<WebhookDeliveryRecord[]> {
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT event_id::text AS event_id, event_type, tenant_id, status, attempts, last_attempt_at, last_status_code, last_error,
            delivered_at, created_at
       FROM gl_webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC, event_id LIMIT $2`,
    [webhookId, Math.max(1, Math.min(500, Math.floor(limit)))],
  );
  const date = (value: unknown) => (value === null || value === undefined ? null : new Date(value as string));
  return rows.map((row) => ({
    eventId: row.event_id as string,
    eventType: row.event_type as string,
    tenantId: (row.tenant_id as string | null) ?? null,
    status: row.status as WebhookDeliveryRecord['status'],
    attempts: Number(row.attempts),
    lastAttemptAt: date(row.last_attempt_at),
    lastStatusCode: row.last_status_code === null ? null : Number(row.last_status_code),
    lastError: (row.last_error as string | null) ?? null,
    deliveredAt: date(row.delivered_at),
    createdAt: new Date(row.created_at as string),
  }));
}
