import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  findIngestCredential,
  registerIngestCredential,
  revokeIngestCredential,
} from '../../../src/auth/ingestKeys.ts';
import { describeOnEachStorage, type TestDb } from '../../support/databases.ts';

describeOnEachStorage('ingest credentials on $name', (target) => {
  // One database per target (opening PGlite costs seconds); each test uses its own tenant.
  let testDb: TestDb;
  beforeAll(async () => {
    testDb = await target.open();
  });
  afterAll(async () => {
    await testDb.dispose();
  });

  it('registers a key, finds it by the key alone, and stores only its hash', async () => {
    const registered = await registerIngestCredential(testDb.db, { tenantId: 'acme', kind: 'device', subject: 'pump-7' });
    expect(registered.status).toBe('registered');
    const key = registered.status === 'registered' ? registered.key : '';
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await findIngestCredential(testDb.db, key)).toEqual({ tenantId: 'acme', kind: 'device', subject: 'pump-7' });
    expect(await findIngestCredential(testDb.db, `${key}x`)).toBeNull();
    const stored = await testDb.db.query<{ text: string }>(
      "SELECT row_to_json(c)::text AS text FROM gl_ingest_credentials c WHERE tenant_id = 'acme'",
    );
    expect(stored.rows[0]!.text).not.toContain(key);
  });

  it('a revoked key is no longer found', async () => {
    const registered = await registerIngestCredential(testDb.db, { tenantId: 'revoking', kind: 'tenant', subject: null });
    const key = registered.status === 'registered' ? registered.key : '';
    expect(await revokeIngestCredential(testDb.db, key)).toBe(true);
    expect(await revokeIngestCredential(testDb.db, key)).toBe(false);
    expect(await findIngestCredential(testDb.db, key)).toBeNull();
  });

  it('refuses a tenant key with a subject, a device key without one, and an empty tenant, storing nothing', async () => {
    expect(await registerIngestCredential(testDb.db, { tenantId: 'refused', kind: 'tenant', subject: 'x' })).toMatchObject({
      status: 'invalid',
      field: 'subject',
    });
    expect(await registerIngestCredential(testDb.db, { tenantId: 'refused', kind: 'device', subject: null })).toMatchObject({
      status: 'invalid',
      field: 'subject',
    });
    expect(await registerIngestCredential(testDb.db, { tenantId: ' ', kind: 'tenant', subject: null })).toMatchObject({
      status: 'invalid',
      field: 'tenantId',
    });
    expect((await testDb.db.query("SELECT 1 FROM gl_ingest_credentials WHERE tenant_id IN ('refused', ' ')")).rowCount).toBe(0);
  });
});
