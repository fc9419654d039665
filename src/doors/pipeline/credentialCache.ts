// Keeps recently verified keys in memory so an admitted request does not cost a database round trip. Only
// keys that verified are kept (a flood of bad keys cannot evict good ones for long, and is paid for from the
// tenant's allowance anyway); the cache is bounded, and a revoked key stops working within `ttlMs`. While the
// database cannot be asked (a restart, a failover), a key that verified within `staleIfErrorMs` keeps working:
// the senders it speaks for are not turned away for the database's outage. A look-up that does not answer at
// all (the database cut off by the network: nothing refuses, packets vanish) counts as failed after
// `staleAfterMs` for a key that has such an entry: the sender is answered from it while the look-up goes on,
// and refreshes the entry if it ever answers.
//
// An entry is looked up again before it expires, in the background, at a moment drawn between half and three
// quarters of the TTL after it verified: the key's senders are answered from the entry meanwhile and never
// wait for that look-up. Keys first seen together (a door's start, 1,000 ingest tenants in its first second)
// expired together before, and each sender then waited for its own look-up, an UPDATE with a commit: every
// 30 s about 1,000 of them queued for the pool at once, the ledger's flush waited ~150 ms for a connection
// and the senders up to a second. The revocation bound is unchanged: an entry answers only within the TTL of
// the look-up that verified it. Concurrent look-ups of one key are one look-up.
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

/** When, as a share of the TTL after a key verified, its entry is looked up again: drawn per entry from this range. */
const REFRESH_FROM = 0.5;
const REFRESH_SPREAD = 0.25;

interface Entry {
  credential: IngestCredential;
  expiresAtMs: number;
  /** From when a use of the entry looks the key up again in the background (once: `refreshing`). */
  refreshAtMs: number;
  refreshing: boolean;
}

export function cachedCredentialLookup(lookup: CredentialLookup, options: CredentialCacheOptions = {}): CredentialLookup {
  const { maxEntries = 10_000, ttlMs = 30_000, staleIfErrorMs = 300_000, staleAfterMs = 1_000, now = Date.now } = options;
  const entries = new Map<string, Entry>();
  // Look-ups under way, by key: a second sender of the key waits for the same one.
  const pending = new Map<string, Promise<IngestCredential | null>>();
  const lookUp = (key: string): Promise<IngestCredential | null> => {
    const running = pending.get(key);
    if (running !== undefined) return running;
    const looked = lookup(key)
      .then((credential) => {
        const current = entries.get(key);
        if (current) entries.delete(key);
        if (credential) {
          // Map iteration order is insertion order: the first key is the oldest entry.
          if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
          const at = now();
          entries.set(key, { credential, expiresAtMs: at + ttlMs, refreshAtMs: at + ttlMs * (REFRESH_FROM + Math.random() * REFRESH_SPREAD), refreshing: false });
        }
        return credential;
      })
      .finally(() => pending.delete(key));
    pending.set(key, looked);
    return looked;
  };
  /** The entry's credential while it is within its TTL, looking the key up again in the background once due. */
  const fresh = (key: string): IngestCredential | undefined => {
    const cached = entries.get(key);
    if (cached === undefined) return undefined;
    const at = now();
    if (cached.expiresAtMs <= at) return undefined;
    if (at >= cached.refreshAtMs && !cached.refreshing) {
      cached.refreshing = true;
      // A failed refresh leaves the entry as it is until it expires: a use after that looks the key up as a
      // miss does (and may be answered from the stale entry).
      lookUp(key).catch(() => {});
    }
    return cached.credential;
  };
  const find = async (key: string) => {
    const known = fresh(key);
    if (known !== undefined) return known;
    const cached = entries.get(key);
    const stale = cached && cached.expiresAtMs + staleIfErrorMs > now() ? cached.credential : undefined;
    const looked = lookUp(key);
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
  return Object.assign(find, { known: fresh });
}
