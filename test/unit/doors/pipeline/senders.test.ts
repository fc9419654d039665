import { describe, expect, it } from 'vitest';
import { authorizeSender } from '../../../../src/doors/pipeline/authorizeSender.ts';
import { cachedCredentialLookup } from '../../../../src/doors/pipeline/credentialCache.ts';
import type { IngestCredential } from '../../../../src/auth/ingestKeys.ts';
import { checkCredential } from '../../../../src/doors/pipeline/steps.ts';
import { requestIdOf } from '../../../../src/http-server/requestId.ts';

const tenantKey: IngestCredential = { tenantId: 'acme', kind: 'tenant', subject: null };
const deviceKey: IngestCredential = { tenantId: 'acme', kind: 'device', subject: 'pump-7' };
const integrationKey: IngestCredential = { tenantId: 'acme', kind: 'integration', subject: 'ttn' };
const http = (entries: Record<string, unknown>[] = []) => ({ route: 'http' as const, tenantId: 'acme', entries });
const integration = (name: string) => ({ route: 'integration' as const, tenantId: 'acme', integration: name });

describe('authorizeSender', () => {
  it('refuses a missing key and a key of another tenant', () => {
    expect(authorizeSender(null, http()).status).toBe('unauthorized');
    expect(authorizeSender({ ...tenantKey, tenantId: 'other' }, http()).status).toBe('unauthorized');
  });

  it('a tenant key posts readings and uplinks', () => {
    expect(authorizeSender(tenantKey, http([{ deviceId: 'any' }])).status).toBe('authorized');
    expect(authorizeSender(tenantKey, integration('ttn')).status).toBe('authorized');
  });

  it('a device key posts only its own readings', () => {
    expect(authorizeSender(deviceKey, http([{ deviceId: 'pump-7' }, {}])).status).toBe('authorized');
    expect(authorizeSender(deviceKey, http([{ deviceId: 'pump-7' }, { deviceId: 'pump-8' }]))).toMatchObject({
      status: 'unauthorized',
      message: expect.stringContaining('readings[1]'),
    });
    expect(authorizeSender(deviceKey, integration('ttn')).status).toBe('unauthorized');
  });

  it('an integration key posts only to its own integration', () => {
    expect(authorizeSender(integrationKey, integration('ttn')).status).toBe('authorized');
    expect(authorizeSender(integrationKey, integration('chirpstack')).status).toBe('unauthorized');
    expect(authorizeSender(integrationKey, http()).status).toBe('unauthorized');
  });
});

describe('cachedCredentialLookup', () => {
  it('answers a verified key from memory until its time to live passes, and never caches a miss', async () => {
    let nowMs = 0;
    const calls: string[] = [];
    const lookup = cachedCredentialLookup(
      async (key) => {
        calls.push(key);
        return key === 'good' ? tenantKey : null;
      },
      { ttlMs: 1000, now: () => nowMs },
    );
    expect(await lookup('good')).toEqual(tenantKey);
    expect(await lookup('good')).toEqual(tenantKey);
    expect(await lookup('bad')).toBeNull();
    expect(await lookup('bad')).toBeNull();
    expect(calls).toEqual(['good', 'bad', 'bad']);
    nowMs = 1000;
    await lookup('good');
    expect(calls).toEqual(['good', 'bad', 'bad', 'good']);
  });

  it('knows a verified key at once within its time to live, and nothing else', async () => {
    let nowMs = 0;
    const lookup = cachedCredentialLookup(async (key) => (key === 'good' ? tenantKey : null), { ttlMs: 1000, now: () => nowMs });
    expect(lookup.known?.('good')).toBeUndefined();
    await lookup('good');
    await lookup('bad');
    expect(lookup.known?.('good')).toEqual(tenantKey);
    expect(lookup.known?.('bad')).toBeUndefined();
    nowMs = 1000;
    expect(lookup.known?.('good')).toBeUndefined();
  });

  it('checks a cached key without a promise, an unknown one with a promise, a missing one at once', async () => {
    const lookup = cachedCredentialLookup(async (key) => (key === 'good' ? tenantKey : null));
    const parts = { findCredential: lookup };
    const first = checkCredential(parts, 'good', http());
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toMatchObject({ status: 'authorized' });
    expect(checkCredential(parts, 'good', http())).toMatchObject({ status: 'authorized' });
    expect(checkCredential(parts, undefined, http())).toMatchObject({ status: 'unauthorized' });
    expect(checkCredential(parts, '', http())).toMatchObject({ status: 'unauthorized' });
    expect(await checkCredential(parts, 'bad', http())).toMatchObject({ status: 'unauthorized' });
    expect(checkCredential(parts, 'good', { ...http(), tenantId: 'other' })).toMatchObject({ status: 'unauthorized' });
  });

  it('answers a key verified lately while the database cannot be asked, and only within staleIfErrorMs', async () => {
    let nowMs = 0;
    let down = false;
    const lookup = cachedCredentialLookup(
      async (key) => {
        if (down) throw new Error('the database is unavailable');
        return key === 'good' ? tenantKey : null;
      },
      { ttlMs: 1000, staleIfErrorMs: 5000, now: () => nowMs },
    );
    expect(await lookup('good')).toEqual(tenantKey);
    down = true;
    nowMs = 3000;
    expect(await lookup('good')).toEqual(tenantKey);
    await expect(lookup('never-seen')).rejects.toThrow('unavailable');
    nowMs = 6000;
    await expect(lookup('good')).rejects.toThrow('unavailable');
    down = false;
    expect(await lookup('good')).toEqual(tenantKey);
  });

  it('holds at most maxEntries keys, dropping the oldest', async () => {
    const calls: string[] = [];
    const lookup = cachedCredentialLookup(
      async (key) => {
        calls.push(key);
        return tenantKey;
      },
      { maxEntries: 2 },
    );
    for (const key of ['a', 'b', 'c', 'b', 'a']) await lookup(key);
    expect(calls).toEqual(['a', 'b', 'c', 'a']);
  });
});

describe('requestIdOf', () => {
  it('keeps a sane caller ID and replaces a missing, long or unsafe one', () => {
    expect(requestIdOf('abc-123_x.y:z')).toBe('abc-123_x.y:z');
    for (const bad of [undefined, '', 'x'.repeat(129), 'a b', 'line\nbreak', ['a', 'b']]) {
      expect(requestIdOf(bad)).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});
