// Webhooks: registrations, the outbox the ledger's notices fill, and its delivery (signed, retried for 24 hours).
export { WEBHOOK_EVENTS, checkWebhook, type RegisterWebhookInput, type WebhookEvent } from './webhookInput.ts';
export { registerWebhook, WEBHOOKS_STREAM, type RegisterWebhookResult } from './registerWebhook.ts';
export { webhookOutboxProjection, deliveryBody } from './webhookOutbox.ts';
export { startWebhookDelivery, retryDelayMs, RETRY_FOR_MS, type WebhookDelivery, type WebhookDeliveryOptions } from './webhookDelivery.ts';
export { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signatureOf, verifySignature } from './signature.ts';
export { listWebhooks, webhookDeliveries, type WebhookDeliveryRecord, type WebhookRecord } from './webhookLog.ts';
