// Checks a webhook registration: every field bounded before it is stored. Expected refusals are values.
import { ID_PATTERN } from '../governance/index.ts';

/** The events a webhook may ask for. */
export const WEBHOOK_EVENTS = ['QuotaThresholdCrossed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export const WEBHOOK_URL_MAX_CHARS = 2_048;
export const WEBHOOK_SECRET_MIN_CHARS = 16;
export const WEBHOOK_SECRET_MAX_CHARS = 256;

export interface RegisterWebhookInput {
  url: unknown;
  secret: unknown;
  events: unknown;
  /** Absent or null: platform-wide, every tenant's notices. */
  tenantId?: unknown;
}

export interface CheckedWebhook {
  url: string;
  secret: string;
  events: WebhookEvent[];
  tenantId: string | null;
}

export interface WebhookInputError {
  kind: 'InvalidInput';
  field: string;
  message: string;
}

const invalid = (field: string, message: string): WebhookInputError => ({ kind: 'InvalidInput', field, message });

export function checkWebhook(input: RegisterWebhookInput): CheckedWebhook | WebhookInputError {
  const { url, secret, events, tenantId } = input;
  if (typeof url !== 'string' || url.length > WEBHOOK_URL_MAX_CHARS) return invalid('url', `url must be text of at most ${WEBHOOK_URL_MAX_CHARS} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return invalid('url', 'url must be an absolute http or https URL');
  }
  if ((parsed.protocol !== 'https:' && parsed.protocol !== 'http:') || parsed.username !== '' || parsed.password !== '') {
    return invalid('url', 'url must be an http or https URL without credentials');
  }
  if (typeof secret !== 'string' || secret.length < WEBHOOK_SECRET_MIN_CHARS || secret.length > WEBHOOK_SECRET_MAX_CHARS || !/^[\x21-\x7e]+$/.test(secret)) {
    return invalid('secret', `secret must be ${WEBHOOK_SECRET_MIN_CHARS} to ${WEBHOOK_SECRET_MAX_CHARS} printable ASCII characters without spaces`);
  }
  if (!Array.isArray(events) || events.length === 0 || events.length > WEBHOOK_EVENTS.length) {
    return invalid('events', `events must name 1 to ${WEBHOOK_EVENTS.length} of ${WEBHOOK_EVENTS.join(', ')}`);
  }
  const known = new Set<string>(WEBHOOK_EVENTS);
  for (const event of events) {
    if (typeof event !== 'string' || !known.has(event)) return invalid('events', `unknown event; known: ${WEBHOOK_EVENTS.join(', ')}`);
  }
  if (tenantId !== undefined && tenantId !== null && (typeof tenantId !== 'string' || !ID_PATTERN.test(tenantId))) {
    return invalid('tenantId', "tenantId must be 1 to 64 letters, digits, '_', '.', ':' or '-'");
  }
  return { url: parsed.href, secret, events: [...new Set(events as WebhookEvent[])], tenantId: (tenantId as string | null | undefined) ?? null };
}
