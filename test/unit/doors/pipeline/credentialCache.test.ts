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

describe('cachedCredentialLookup before the TTL runs out', () => {
  it('looks a key up again in the background once past three quarters of the TTL, answering from the entry meanwhile', async () => {
    let clock = 0;
    let calls = 0;
    let release: ((credential: IngestCredential | null) => void) | undefined;
    const lookup = cachedCredentialLookup(
      () => {
        calls++;
        return calls === 1 ? Promise.resolve(key) : new Promise<IngestCredential | null>((resolve) => (release = resolve));
      },
      { ttlMs: 1_000, now: () => clock },
    );
    expect(await lookup('k')).toEqual(key);
    clock = 400; // before half the TTL: no look-up
    expect(lookup.known?.('k')).toEqual(key);
    expect(calls).toBe(1);
    clock = 800; // past the refresh point whatever was drawn: one look-up, the sender answered at once
    expect(lookup.known?.('k')).toEqual(key);
    expect(await lookup('k')).toEqual(key);
    expect(calls).toBe(2);
    // The key was revoked meanwhile: the refresh's answer removes it, within the TTL of its last verification.
    release!(null);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lookup.known?.('k')).toBeUndefined();
  });

  it('an entry refreshed in time does not expire, and the TTL counts from the refresh', async () => {
    let clock = 0;
    let calls = 0;
    const lookup = cachedCredentialLookup(
      () => {
        calls++;
        return Promise.resolve(key);
      },
      { ttlMs: 1_000, now: () => clock },
    );
    await lookup('k');
    clock = 800;
    lookup.known?.('k');
    await new Promise((resolve) => setImmediate(resolve));
    clock = 1_250; // past the first look-up's TTL, before the refreshed entry's own refresh point
    expect(lookup.known?.('k')).toEqual(key);
    expect(calls).toBe(2);
  });

  it('a refresh that fails leaves the entry to its TTL', async () => {
    let clock = 0;
    let fail = false;
    const lookup = cachedCredentialLookup(() => (fail ? Promise.reject(new Error('down')) : Promise.resolve(key)), { ttlMs: 1_000, staleIfErrorMs: 0, now: () => clock });
    await lookup('k');
    fail = true;
    clock = 800;
    expect(lookup.known?.('k')).toEqual(key);
    await new Promise((resolve) => setImmediate(resolve));
    clock = 900;
    expect(lookup.known?.('k')).toEqual(key);
    clock = 1_000;
    expect(lookup.known?.('k')).toBeUndefined();
  });

  it('senders of one key that is not cached share one look-up', async () => {
    let calls = 0;
    let release: ((credential: IngestCredential | null) => void) | undefined;
    const lookup = cachedCredentialLookup(() => {
      calls++;
      return new Promise<IngestCredential | null>((resolve) => (release = resolve));
    });
    const answers = [lookup('k'), lookup('k'), lookup('k')];
    expect(calls).toBe(1);
    release!(key);
    expect(await Promise.all(answers)).toEqual([key, key, key]);
  });
});
