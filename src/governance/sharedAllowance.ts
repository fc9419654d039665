// Shared counting across replicas (REDIS_URL), keeping admit synchronous. Each replica reserves budget from
// Redis in slices, in the background (as Sentry Relay's global quotas and YouTube's Doorman do), and admits
// from the slice it holds. Until the first slice of a key (or of a new window) arrives, a replica may admit
// up to one slice on credit; the credit is debited in Redis with the next reservation.
//
// A reservation asks for twice what the replica was offered during the previous round trip (as Doorman sizes
// leases by demand), at least the minimum slice S = max(ceil(limit / 100), units of the request) and at most
// ceil(limit / 20), so a busy replica is not starved by Redis latency and an idle one holds little.
//
// Accuracy bound, per key, with N replicas:
// - admitted <= limit + N x S per window (fixed window), or burst + rate x T + N x S (token bucket): grants
//   never exceed the shared count, only the credit taken before a first reply can;
// - under sustained demand on every replica, admitted >= limit - what replicas hold when the window ends,
//   which is at most 2 x N x limit / 20 and in practice twice the demand of one round trip per replica.
//   With two replicas on one host that measured within [0.95, 1.02] x limit (test/integration/governance).
// When a reservation fails the Governor falls back to local metering at half the limit (OpenRUM) and probes
// Redis again every `sharedRetryMs`; the first answer returns it to shared counting.

export interface ReserveRequest {
  key: string;
  kind: 'TOKEN_BUCKET' | 'FIXED_WINDOW';
  /** Tokens per second, or requests per window for FIXED_WINDOW. */
  ratePerSecond: number;
  burst: number;
  /** The admission's own time: the shared bucket refills by it, and it picks the window. */
  atMs: number;
  wantUnits: number;
  /** Units admitted on credit, to be debited first. */
  debtUnits: number;
}

/** Port to the shared counters; createRedisSharedBudget implements it over ioredis. */
export interface SharedBudget {
  /** Resolves with the units granted (0 when the shared budget is spent); rejects when unreachable. */
  reserve(request: ReserveRequest): Promise<number>;
  close(): Promise<void>;
}

export class SharedAllowance {
  /** Units reserved in Redis and not yet used here. */
  granted = 0;
  /** Units admitted on credit before a reply arrived. */
  debt = 0;
  inFlight = false;
  /** A reply has arrived for the current window (token bucket: ever). */
  warm = false;
  windowSecond = Number.NEGATIVE_INFINITY;
  /** Do not ask again before this admission time: the shared budget was spent. */
  nextAskAtMs = Number.NEGATIVE_INFINITY;
  /** Units offered here since the last reservation was sent: the demand of one round trip. */
  offeredSinceAsk = 0;
  /** What to ask for next, from the demand of the last round trip. */
  wantUnits = 0;

  constructor(readonly key: string) {}
}
