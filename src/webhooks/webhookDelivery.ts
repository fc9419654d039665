// Delivers the outbox (gl_webhook_deliveries) at least once: claims due deliveries (a lease, so replicas share the
// work and a delivery whose process died is tried again once its lease lapses), POSTs each signed body with a
// timeout, and records the answer: DELIVERED on a 2xx; otherwise tried again with backoff (10 s doubling, at most
// an hour apart) until 24 hours after the notice, then FAILED. A receiver never holds the service: each POST is
// cut off at `timeoutMs`, and only `concurrency` are under way at once.
import type { Db } from '../db/index.ts';
import { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signatureOf } from './signature.ts';

export const RETRY_FOR_MS = 24 * 3600 * 1000;
const FIRST_RETRY_MS = 10_000;
const MAX_RETRY_MS = 3600 * 1000;
const ERROR_MAX_CHARS = 500;

export interface WebhookDeliveryOptions {
  db: Db;
  now?: () => number;
  /** A POST not answered by then counts as failed (default 5 s). */
  timeoutMs?: number;
  /** How often the outbox is read when it had nothing due (default 1 s). */
  pollMs?: number;
  /** Deliveries claimed and sent at once (default 8). */
  concurrency?: number;
  /** The first retry's delay, doubling after each failure (default 10 s). */
  firstRetryMs?: number;
  onError?: (error: unknown) => void;
}

export interface WebhookDelivery {
  /** Delivers what is due now; resolves with how many were attempted. */
  runOnce(): Promise<number>;
  close(): Promise<void>;
}

interface DueRow {
  webhook_id: string;
  event_id: string;
  event_type: string;
  body: string;
  attempts: number;
  created_at: Date | string;
  url: string;
  secret: string;
}

export function retryDelayMs(attempts: number, firstRetryMs = FIRST_RETRY_MS): number {
  return Math.min(MAX_RETRY_MS, firstRetryMs * 2 ** Math.min(20, Math.max(0, attempts - 1)));
}

export function startWebhookDelivery(options: WebhookDeliveryOptions): WebhookDelivery {
  const { db } = options;
  const now = options.now ?? Date.now;
  const timeoutMs = options.timeoutMs ?? 5000;
  const concurrency = options.concurrency ?? 8;
  const firstRetryMs = options.firstRetryMs ?? FIRST_RETRY_MS;
  const onError = options.onError ?? (() => {});
  let closed = false;
  let running: Promise<number> | null = null;
  let timer: NodeJS.Timeout | undefined;

  const attempt = async (row: DueRow): Promise<void> => {
    const timestampSeconds = Math.floor(now() / 1000);
    let statusCode: number | null = null;
    let error: string | null = null;
    try {
      const response = await fetch(row.url, {
        method: 'POST',
        body: row.body,
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
        headers: {
          'content-type': 'application/json',
          [EVENT_HEADER]: row.event_type,
          [DELIVERY_HEADER]: row.event_id,
          [SIGNATURE_HEADER]: signatureOf(row.secret, timestampSeconds, row.body),
        },
      });
      statusCode = response.status;
      // The body is not read beyond what the connection needs: a receiver's answer is not kept.
      await response.body?.cancel();
    } catch (fault) {
      error = (fault instanceof Error ? `${fault.name}: ${fault.message}` : String(fault)).slice(0, ERROR_MAX_CHARS);
    }
    const attempts = row.attempts + 1;
    const at = now();
    if (statusCode !== null && statusCode >= 200 && statusCode < 300) {
      await db.query(
        `UPDATE gl_webhook_deliveries SET status = 'DELIVERED', attempts = $3, last_attempt_at = $4, last_status_code = $5,
           last_error = NULL, delivered_at = $4 WHERE webhook_id = $1 AND event_id = $2`,
        [row.webhook_id, row.event_id, attempts, new Date(at), statusCode],
      );
      return;
    }
    const createdMs = new Date(row.created_at).getTime();
    const next = at + retryDelayMs(attempts, firstRetryMs);
    const failed = next - createdMs > RETRY_FOR_MS;
    await db.query(
      `UPDATE gl_webhook_deliveries SET status = $3, attempts = $4, last_attempt_at = $5, last_status_code = $6, last_error = $7,
         next_attempt_at = $8 WHERE webhook_id = $1 AND event_id = $2`,
      [row.webhook_id, row.event_id, failed ? 'FAILED' : 'PENDING', attempts, new Date(at), statusCode, error ?? `HTTP ${statusCode}`, new Date(next)],
    );
  };

  const runOnce = async (): Promise<number> => {
    const at = now();
    // The lease: a claimed delivery is not due again until its POST has had time to end; if this process dies
    // meanwhile, another tries it then (the receiver may then see it twice, under the same delivery id).
    const { rows } = await db.query<DueRow>(
      `WITH due AS (
         SELECT webhook_id, event_id FROM gl_webhook_deliveries
          WHERE status = 'PENDING' AND next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       UPDATE gl_webhook_deliveries d SET next_attempt_at = $2
         FROM due, gl_webhooks w
        WHERE d.webhook_id = due.webhook_id AND d.event_id = due.event_id AND w.webhook_id = d.webhook_id
       RETURNING d.webhook_id, d.event_id::text AS event_id, d.event_type, d.body, d.attempts, d.created_at, w.url, w.secret`,
      [new Date(at), new Date(at + timeoutMs + 5000), concurrency],
    );
    await Promise.all(rows.map((row) => attempt(row).catch(onError)));
    return rows.length;
  };

  const loop = async () => {
    if (closed) return;
    let attempted = 0;
    try {
      running = runOnce();
      attempted = await running;
    } catch (error) {
      onError(error);
    } finally {
      running = null;
    }
    if (!closed) timer = setTimeout(() => void loop(), attempted > 0 ? 0 : (options.pollMs ?? 1000));
  };
  timer = setTimeout(() => void loop(), 0);

  return {
    runOnce,
    async close() {
      closed = true;
      clearTimeout(timer);
      await running?.catch(() => 0);
    },
  };
}
