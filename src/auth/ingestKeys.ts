// Ingest credentials: the keys a device, an integration or a whole tenant presents in X-Device-Key. The
// front door checks them only after a request is admitted (docs/governance-model.md, the order of a door's checks), so every check it makes
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

/**
 * The credential a key stands for, or null when it is unknown or revoked. A key found is marked used now: the
 * front door caches verified keys, so this runs once per key per cache lifetime, not per request.
 */
export async function findIngestCredential(q: Queryable, key: string): Promise<IngestCredential | null> {
  const result = await q.query<{ tenant_id: string; kind: CredentialKind; subject: string | null }>(
    `UPDATE gl_ingest_credentials SET last_used_at = now() WHERE key_hash = $1 AND revoked_at IS NULL
     RETURNING tenant_id, kind, subject`,
    [hashKey(key)],
  );
  const row = result.rows[0];
  return row ? { tenantId: row.tenant_id, kind: row.kind, subject: row.subject } : null;
}

/** How many leading bytes of a key's hash name it in listings and revocations (12 hex digits). */
const KEY_ID_BYTES = 6;

/** What an operator may see of a key: never the key, only enough of its hash to tell keys apart. */
export interface IngestKeyListing extends IngestCredential {
  /** The first 12 hex digits of the key's SHA-256: names the key in ingestKeys and revokeIngestKey. */
  keyId: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

interface ListingRow {
  key_id: string;
  tenant_id: string;
  kind: CredentialKind;
  subject: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const LISTING_COLUMNS = `encode(substring(key_hash from 1 for ${KEY_ID_BYTES}), 'hex') AS key_id, tenant_id, kind, subject, created_at, last_used_at, revoked_at`;

function toListing(row: ListingRow): IngestKeyListing {
  return {
    keyId: row.key_id,
    tenantId: row.tenant_id,
    kind: row.kind,
    subject: row.subject,
    createdAt: new Date(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
  };
}

/** Every key of a tenant, revoked ones included, newest first. */
export async function listIngestKeys(q: Queryable, tenantId: string): Promise<IngestKeyListing[]> {
  const { rows } = await q.query<ListingRow>(
    `SELECT ${LISTING_COLUMNS} FROM gl_ingest_credentials WHERE tenant_id = $1 ORDER BY created_at DESC, key_hash`,
    [tenantId],
  );
  return rows.map(toListing);
}

/** The listing of the key just issued (by its key). */
export async function describeIngestKey(q: Queryable, key: string): Promise<IngestKeyListing | null> {
  const { rows } = await q.query<ListingRow>(`SELECT ${LISTING_COLUMNS} FROM gl_ingest_credentials WHERE key_hash = $1`, [hashKey(key)]);
  return rows[0] ? toListing(rows[0]) : null;
}

export type RevokeByIdResult = { status: 'revoked'; key: IngestKeyListing } | { status: 'unknown' } | { status: 'alreadyRevoked'; key: IngestKeyListing };

/** Revokes the tenant's key named by its keyId; a key already revoked keeps its first revocation time. */
export async function revokeIngestKeyById(q: Queryable, tenantId: string, keyId: string): Promise<RevokeByIdResult> {
  if (!/^[0-9a-f]{12}$/.test(keyId)) return { status: 'unknown' };
  const match = `tenant_id = $1 AND substring(key_hash from 1 for ${KEY_ID_BYTES}) = decode($2, 'hex')`;
  const revoked = await q.query<ListingRow>(
    `UPDATE gl_ingest_credentials SET revoked_at = now() WHERE ${match} AND revoked_at IS NULL RETURNING ${LISTING_COLUMNS}`,
    [tenantId, keyId],
  );
  if (revoked.rows[0]) return { status: 'revoked', key: toListing(revoked.rows[0]) };
  const earlier = await q.query<ListingRow>(`SELECT ${LISTING_COLUMNS} FROM gl_ingest_credentials WHERE ${match}`, [tenantId, keyId]);
  return earlier.rows[0] ? { status: 'alreadyRevoked', key: toListing(earlier.rows[0]) } : { status: 'unknown' };
}

function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}
