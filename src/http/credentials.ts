// Ingest credentials: the keys a device, an integration or a whole tenant presents in X-Device-Key. The
// front door checks them only after a request is admitted (the spec's order), so every check it makes
// has already been paid for out of the tenant's allowance.
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from '../db/db.ts';

export type CredentialKind = 'tenant' | 'device' | 'integration';

export interface IngestCredential {
  tenantId: string;
  kind: CredentialKind;
  /** The device ID or integration name; null for a tenant key. */
  subject: string | null;
}

export type RegisterCredentialResult =
  | { status: 'registered'; key: string; credential: IngestCredential }
  | { status: 'invalid'; field: 'tenantId' | 'subject'; message: string };

/** Creates a key and returns it once; only its hash is stored. */
export async function registerIngestCredential(q: Queryable, credential: IngestCredential): Promise<RegisterCredentialResult> {
  if (credential.tenantId.trim() === '') return { status: 'invalid', field: 'tenantId', message: 'tenantId is required' };
  if (credential.kind === 'tenant' && credential.subject !== null) {
    return { status: 'invalid', field: 'subject', message: 'a tenant key names no device or integration' };
  }
  if (credential.kind !== 'tenant' && (credential.subject === null || credential.subject.trim() === '')) {
    return { status: 'invalid', field: 'subject', message: `a ${credential.kind} key names its ${credential.kind}` };
  }
  const key = randomBytes(32).toString('base64url');
  await q.query('INSERT INTO gl_ingest_credentials (key_hash, tenant_id, kind, subject) VALUES ($1, $2, $3, $4)', [
    hashKey(key),
    credential.tenantId,
    credential.kind,
    credential.subject,
  ]);
  return { status: 'registered', key, credential };
}

export async function revokeIngestCredential(q: Queryable, key: string): Promise<boolean> {
  const result = await q.query('UPDATE gl_ingest_credentials SET revoked_at = now() WHERE key_hash = $1 AND revoked_at IS NULL', [
    hashKey(key),
  ]);
  return result.rowCount > 0;
}

/** The credential a key stands for, or null when it is unknown or revoked. */
export async function findIngestCredential(q: Queryable, key: string): Promise<IngestCredential | null> {
  const result = await q.query<{ tenant_id: string; kind: CredentialKind; subject: string | null }>(
    'SELECT tenant_id, kind, subject FROM gl_ingest_credentials WHERE key_hash = $1 AND revoked_at IS NULL',
    [hashKey(key)],
  );
  const row = result.rows[0];
  return row ? { tenantId: row.tenant_id, kind: row.kind, subject: row.subject } : null;
}

function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}
