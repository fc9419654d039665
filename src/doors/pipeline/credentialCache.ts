// Keeps recently verified keys in memory so an admitted request does not cost a database round trip. Only
// keys that verified are kept (a flood of bad keys cannot evict good ones for long, and is paid for from the
// tenant's allowance anyway); the cache is bounded, and a revoked key stops working within `ttlMs`. While the
// database cannot be asked (a restart, a failover), a key that verified within `staleIfErrorMs` keeps working:
// the senders it speaks for are not turned away for the database's outage. A look-up that does not answer at
// all (the database cut off by the network: nothing refuses, packets vanish) counts as failed after
// `staleAfterMs` for a key that has such an entry: the sender is answered from it while the look-up goes on,
// and refreshes the entry if it ever answers.
import type { IngestCredential } from '../../auth/index.ts';

export interface CredentialCacheOptions {
  maxEntries?: number;
  ttlMs?: number;
  /** How long past its TTL an entry still answers when the look-up fails (default 5 minutes). */
  staleIfErrorMs?: number;
  /** How long a look-up of a key with a stale entry may take before the entry answers (default 1 s). */
  staleAfterMs?: number;
  now?: () => number;
}

export interface CredentialLookup {
  (key: string): Promise<IngestCredential | null>;
  /**
   * The credential of a key that verified within the TTL, at once; undefined when it must be looked up. Lets a
   * door check a cached key without waiting a turn of the event loop.
   */
  known?(key: string): IngestCredential | undefined;
}

export function cachedCredentialLookup(lookup: CredentialLookup, options: CredentialCacheOptions = {}): CredentialLookup {
  const { maxEntries = 10_000, ttlMs = 30_000, staleIfErrorMs = 300_000, staleAfterMs = 1_000, now = Date.now } = options;
  const entries = new Map<string, { credential: IngestCredential; expiresAtMs: number }>();
  const known = (key: string) => {
    const cached = entries.get(key);
    return cached && cached.expiresAtMs > now() ? cached.credential : undefined;
  };
  const find = async (key: string) => {
    const cached = entries.get(key);
    if (cached && cached.expiresAtMs > now()) return cached.credential;
    const stale = cached && cached.expiresAtMs + staleIfErrorMs > now() ? cached.credential : undefined;
    const looked = lookup(key).then((credential) => {
      const current = entries.get(key);
      if (current) entries.delete(key);
      if (credential) {
        // Map iteration order is insertion order: the first key is the oldest entry.
        if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
        entries.set(key, { credential, expiresAtMs: now() + ttlMs });
      }
      return credential;
    });
    if (!stale) return looked;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<IngestCredential>((resolve) => {
      timer = setTimeout(() => resolve(stale), staleAfterMs);
    });
    try {
      return await Promise.race([looked, late]);
    } catch {
      return stale;
    } finally {
      clearTimeout(timer);
      // A look-up still running when the stale entry answered must not end as an unhandled rejection.
      looked.catch(() => {});
    }
  };
  return Object.assign(find, { known });
}
