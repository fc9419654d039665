// A stable hash of a caller key (FNV-1a, 32 bits, with MurmurHash3's finaliser so keys that differ only in
// their last characters still spread over the whole range) mapped to [0, 1). The same caller always lands on the same
// fraction, so STABLE_DOWNSAMPLE keeps or drops a caller as a whole instead of thinning every session.
export function stableCallerFraction(callerKey: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < callerKey.length; i++) {
    hash ^= callerKey.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return (hash >>> 0) / 4294967296;
}
