// What makes two enqueues of one commandId "the same command": the device and the payload. A commandId is an
// idempotency key (as payment APIs treat theirs): sent again with the same content it is answered as the
// first time; sent with other content it is a CommandIdConflict, never silently answered "accepted" while the
// other content is dropped. The fingerprint is a SHA-256 of the device id and the payload in canonical form
// (object keys sorted), so {"a":1,"b":2} and {"b":2,"a":1} are the same payload, as jsonb stores them.
import { createHash } from 'node:crypto';

export function commandFingerprint(deviceId: string, payload: unknown): string {
  return createHash('sha256').update(canonicalJson([deviceId, payload])).digest('base64url');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
