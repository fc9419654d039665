// The edge per-IP limit: instance-level (not per tenant), default 1000 requests per second per client
// address, applied before anything is known of the tenant. One token bucket per client key.
//
// Memory is bounded by maxClients, in two generations of at most maxClients / 2 each: a client seen again is
// moved into the current generation; when the current one is full, the previous one is dropped whole. A
// dropped client had not sent for a whole generation; if its bucket had refilled to its burst, dropping it
// loses nothing (a new bucket is the same), otherwise it starts again with a full burst, which is counted.
// (Evicting one entry at a time from the front of a Map would be quadratic: V8 leaves deleted entries as
// holes that every walk from the front must skip.)
import { TokenBucket } from '../../governance/index.ts';

/** The instance-level per-client limit (not per tenant): one decision per request or message, keyed by client address. */
export interface EdgeLimit {
  /** The limit's own record of the decision, overwritten by its next call: read it at once. */
  admit(key: string, atMs: number): Readonly<EdgeDecision>;
}

export interface EdgeDecision {
  admitted: boolean;
  limit: number;
  remaining: number;
  retryAfterSeconds: number;
}

export interface EdgeLimitOptions {
  ratePerSecond: number;
  /** Defaults to one second's worth. */
  burst?: number;
  maxClients?: number;
}

export interface BoundedEdgeLimit extends EdgeLimit {
  readonly clients: number;
  /** Active clients dropped because the table was full of active clients. */
  readonly lossyEvictions: number;
}

export function createEdgeLimit(options: EdgeLimitOptions): BoundedEdgeLimit {
  const { ratePerSecond, burst = ratePerSecond, maxClients = 100_000 } = options;
  const refillMs = (burst * 1000) / ratePerSecond;
  const generationSize = Math.max(1, Math.floor(maxClients / 2));
  let current = new Map<string, TokenBucket>();
  let previous = new Map<string, TokenBucket>();
  let lossyEvictions = 0;
  // One record for every decision: each request or message is checked here, and it is read at once.
  const decided: EdgeDecision = { admitted: false, limit: ratePerSecond, remaining: 0, retryAfterSeconds: 0 };

  const rotate = (atMs: number) => {
    for (const bucket of previous.values()) if (atMs - bucket.lastMs < refillMs) lossyEvictions++;
    previous = current;
    current = new Map();
  };

  return {
    get clients() {
      return current.size + previous.size;
    },
    get lossyEvictions() {
      return lossyEvictions;
    },
    admit(key, atMs) {
      let bucket = current.get(key);
      if (bucket === undefined) {
        bucket = previous.get(key);
        if (bucket === undefined) bucket = new TokenBucket();
        else previous.delete(key);
        if (current.size >= generationSize) rotate(atMs);
        current.set(key, bucket);
      }
      const admitted = bucket.take(1, atMs, ratePerSecond, burst);
      decided.admitted = admitted;
      decided.remaining = bucket.remaining();
      decided.retryAfterSeconds = admitted ? 0 : bucket.retryAfterSeconds(1, ratePerSecond, burst);
      return decided;
    },
  };
}
