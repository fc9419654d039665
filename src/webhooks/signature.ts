// The signature a receiver checks: HMAC-SHA256 (node:crypto) over "<timestamp>.<body>" with the webhook's secret,
// sent as `X-Governance-Signature: t=<unix seconds>,v1=<hex>`. The timestamp in the signed text lets a receiver
// refuse an old delivery replayed; the delivery id (X-Governance-Delivery, the ledger event's id) lets it
// ignore a delivery it has already handled (deliveries are at least once).
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-Governance-Signature';
export const DELIVERY_HEADER = 'X-Governance-Delivery';
export const EVENT_HEADER = 'X-Governance-Event';

export function signatureOf(secret: string, timestampSeconds: number, body: string): string {
  const digest = createHmac('sha256', secret).update(`${timestampSeconds}.${body}`).digest('hex');
  return `t=${timestampSeconds},v1=${digest}`;
}

/** For receivers (and tests): whether `header` signs `body` with `secret`. */
export function verifySignature(secret: string, header: string, body: string): boolean {
  const match = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header);
  if (!match) return false;
  const expected = Buffer.from(signatureOf(secret, Number(match[1]), body));
  const given = Buffer.from(header);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
