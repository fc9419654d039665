// The cached key look-up while the database does not answer at all (a network cut): a key with a stale entry
// is answered from it after staleAfterMs; a key without one waits for the look-up.
import { describe, expect, it } from 'vitest';
import { cachedCredentialLookup } from '../../../../src/doors/pipeline/credentialCache.ts';
import type { IngestCredential } from '../../../../src/auth/ingestKeys.ts';

const key: IngestCredential = { tenantId: 'acme', kind: 'tenant', subject: null };

describe('cachedCredentialLookup when the look-up hangs', () => {
  it('answers a stale entry after staleAfterMs, and refreshes it when the look-up answers', async () => {
    let clock = 0;
    let hang = false;
    let release: ((credential: IngestCredential | null) => void) | undefined;
    const lookup = cachedCredentialLookup(
      (_key) => (hang ? new Promise<IngestCredential | null>((resolve) => (release = resolve)) : Promise.resolve(key)),
      { ttlMs: 1_000, staleIfErrorMs: 10_000, staleAfterMs: 20, now: () => clock },
    );
    expect(await lookup('k')).toEqual(key);
    clock = 2_000; // past the TTL, within staleIfError
    hang = true;
    const started = Date.now();
    expect(await lookup('k')).toEqual(key);
    expect(Date.now() - started).toBeLessThan(1_000);
    // The look-up answers late, revoking the key: the next call sees it.
    release!(null);
    await new Promise((resolve) => setImmediate(resolve));
    hang = false;
    expect(lookup.known?.('k')).toBeUndefined();
  });

  it('a key past staleIfError waits for its look-up', async () => {
    let clock = 0;
    let release: ((credential: IngestCredential | null) => void) | undefined;
    let hang = false;
    const lookup = cachedCredentialLookup(
      () => (hang ? new Promise<IngestCredential | null>((resolve) => (release = resolve)) : Promise.resolve(key)),
      { ttlMs: 1_000, staleIfErrorMs: 1_000, staleAfterMs: 10, now: () => clock },
    );
    await lookup('k');
    clock = 5_000;
    hang = true;
    let settled = false;
    const answer = lookup('k').then((credential) => ((settled = true), credential));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toBe(false);
    release!(key);
    expect(await answer).toEqual(key);
  });
});
