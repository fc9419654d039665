// Registers a webhook: the row (with its secret) in gl_webhooks, and a WebhookRegistered event in the ledger for
// the audit trail (without the secret: the ledger keeps everything for good). Operators only.
import { randomUUID } from 'node:crypto';
import type { Db } from '../db/index.ts';
import { appendInTransaction } from '../ledger/index.ts';
import { checkWebhook, type RegisterWebhookInput, type WebhookInputError } from './webhookInput.ts';

export const WEBHOOKS_STREAM = 'webhooks';

export type RegisterWebhookResult = { status: 'registered'; webhookId: string } | ({ status: 'refused' } & WebhookInputError);

export async function registerWebhook(db: Db, actor: string, input: RegisterWebhookInput): Promise<RegisterWebhookResult> {
  const checked = checkWebhook(input);
  if ('kind' in checked) return { status: 'refused', ...checked };
  const webhookId = randomUUID();
  await db.transaction(async (tx) => {
    await tx.query('INSERT INTO gl_webhooks (webhook_id, tenant_id, url, secret, events) VALUES ($1, $2, $3, $4, $5)', [
      webhookId,
      checked.tenantId,
      checked.url,
      checked.secret,
      JSON.stringify(checked.events),
    ]);
    await appendInTransaction(tx, WEBHOOKS_STREAM, [
      {
        type: 'WebhookRegistered',
        data: { webhookId, tenantId: checked.tenantId, url: checked.url, events: checked.events },
        metadata: { actor, occurredAt: new Date().toISOString() },
      },
    ]);
  });
  return { status: 'registered', webhookId };
}
