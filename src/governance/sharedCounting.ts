// Shared counting across replicas (REDIS_URL), keeping admit synchronous. Each replica reserves budget from
// Redis in slices, in the background (as Sentry Relay's global quotas and YouTube's Doorman do), and admits
// from the slice it holds. Until the first slice of a key (or of a new window) arrives, a replica may admit
// up to one slice on credit; the credit is debited in Redis with the next reservation.
//
// A replica holds up to a level of twice what it was offered during the previous round trip (as Doorman sizes
// leases by demand), at least the minimum slice S = max(ceil(limit / 100), units of the request) and at most
// ceil(limit / 20), so a busy replica is not starved by Redis latency and an idle one holds little. It tops up
// to the level, asking for the shortfall only, once what it holds falls below half of it (or below the request
// at hand), so what it holds never exceeds the level.
//
// Accuracy bound, per key, with N replicas:
// - admitted <= limit + N x S per window (fixed window), or burst + rate x T + N x S (token bucket): grants
//   never exceed the shared count, only the credit taken before a first reply can;
// - under sustained demand on every replica, admitted >= limit - what replicas hold when the window ends,
//   which is at most N x limit / 20 (each one's level) and in practice twice the demand of one round trip per replica.
//   With two replicas on one host that measured within [0.95, 1.02] x limit (test/integration/governance).
// A count larger than what one request can ever get (the burst; a fixed window's limit) never reaches the shared
// budget: the Governor refuses it as never-fits first, as it does metering alone. The scripts bound it again on
// their side (want and debt at most one burst, the bucket never below minus one burst), so no reservation, even
// a bad one, can leave a tenant refused for longer than two bursts take to refill.
//
// A caller that can wait (the admission API, deciding a batch) plans the batch first (`plan`, then
// `reservePlanned`): each counter reserves what the batch asks of it (at most one burst) and the batch is decided
// once the answers are in, so it is admitted as far as the shared tokens allow, not as far as the slice held.
// What the batch leaves of its reservation is held for the next admissions as any slice is.
//
// When a reservation fails the Governor falls back to local metering at half the limit (OpenRUM) and probes
// Redis again every `retryMs`; the first answer returns it to shared counting. What a replica admitted alone in
// a fixed window is owed to the shared counter as credit is (`admittedAlone`): the next reservation for that
// window debits it, so a window in which the replicas return counts what they admitted alone, and the return
// adds at most the credit bound above, not a whole limit more (two replicas cut off together admitted 2 x the
// limit in the second of their return without it). A token bucket's fallback admissions are not carried over:
// the shared bucket refills while they are made, so what they owe depends on when they were made.
//
// A shadow limit (mode SHADOW) is counted the same way, on counters of its own (`shadowCounterOf`): its decisions
// refuse nothing, but what it would have refused is then what one limit shared by every replica would refuse.
//
// Two parts, as Relay's GlobalRateLimits and GlobalRateLimit: `SharedCounting`, one per Governor, holds the
// port, knows whether the shared budget is reachable and counts reservations in flight; `SharedAllowance`,
// one per (tenant, dimension, allowance, charge), holds its slice and decides from it.
import type { QuotaGrant, QuotaReserveRequest } from './quotaMeter.ts';
import type { SlotSpec } from './slots.ts';

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
  /** Reserves a slice of a period quota (quotaMeter.ts); without it quotas are counted by each replica alone. */
  reserveQuota?(request: QuotaReserveRequest): Promise<QuotaGrant>;
  close(): Promise<void>;
}

export interface SharedCountingOptions {
  now: () => number;
  /** How soon an unreachable shared budget is probed again. */
  retryMs: number;
  onError: (error: unknown) => void;
}

/** Where an allowance keeps its shared counters (AllowanceState): made on first use. */
export interface SharedCounters {
  readonly tenantId: string;
  readonly slot: SlotSpec;
  sharedReadings: SharedAllowance | null;
  sharedMessages: SharedAllowance | null;
  /** The shadow limit's counters (mode SHADOW): keys of their own, counted as the enforced ones are. */
  sharedShadowReadings: SharedAllowance | null;
  sharedShadowMessages: SharedAllowance | null;
}

/** The smallest slice asked for: 1% of the limit, or the request itself when it is bigger. */
function minimumSlice(rate: number, units: number): number {
  return Math.max(Math.ceil(rate / 100), units);
}

export class SharedCounting {
  /** False from a failed reservation until the next answered one: each replica then meters alone. */
  available = true;
  failures = 0;
  /** Admitted by local metering at half the limit while the shared budget was unreachable. */
  fallbackAdmissions = 0;
  private retryAtMs = 0;
  private reservationsInFlight = 0;
  private readonly settledWaiters: (() => void)[] = [];

  constructor(
    private readonly budget: SharedBudget,
    private readonly options: SharedCountingOptions,
  ) {}

  counterOf(allowance: SharedCounters, byMessage: boolean): SharedAllowance {
    if (byMessage) return (allowance.sharedMessages ??= new SharedAllowance(sharedKey(allowance, 'messages'), allowance.slot.kind, this));
    return (allowance.sharedReadings ??= new SharedAllowance(sharedKey(allowance, 'readings'), allowance.slot.kind, this));
  }

  /**
   * The shadow limit's counter (a limit set with mode SHADOW): the same slices, credit, bounds and fallback as
   * the enforced counter's, on keys of its own beside the enforced ones (same tenant hash tag, same slot), so
   * N replicas decide one shadow limit together instead of N times it.
   */
  shadowCounterOf(allowance: SharedCounters, byMessage: boolean): SharedAllowance {
    if (byMessage) {
      return (allowance.sharedShadowMessages ??= new SharedAllowance(sharedKey(allowance, 'shadow-messages'), allowance.slot.kind, this));
    }
    return (allowance.sharedShadowReadings ??= new SharedAllowance(sharedKey(allowance, 'shadow-readings'), allowance.slot.kind, this));
  }

  /**
   * While the budget is unreachable, at most once per `retryMs` (by the Governor's clock `nowMs`): one
   * reservation at the full limits, whose answer tells whether the budget is back.
   */
  probeIfDue(nowMs: number, allowance: SharedCounters, byMessage: boolean, units: number, at: number, rate: number, burst: number): void {
    if (nowMs < this.retryAtMs) return;
    this.retryAtMs = this.options.now() + this.options.retryMs;
    this.counterOf(allowance, byMessage).probe(units, at, rate, burst);
  }

  /** Resolves when no reservation is on its way to or from the shared budget. */
  settled(): Promise<void> {
    if (this.reservationsInFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  /** Sends one reservation for a SharedAllowance: `onGranted` on an answer, `onSettled` after either outcome. */
  reserve(request: ReserveRequest, onGranted: (granted: number) => void, onSettled: () => void): void {
    this.reservationsInFlight++;
    this.budget
      .reserve(request)
      .then(
        (granted) => {
          this.available = true;
          onGranted(granted);
        },
        (error: unknown) => {
          this.failures++;
          if (this.available) {
            this.available = false;
            this.retryAtMs = this.options.now() + this.options.retryMs;
          }
          this.options.onError(error);
        },
      )
      .finally(() => {
        onSettled();
        if (--this.reservationsInFlight === 0) for (const resolve of this.settledWaiters.splice(0)) resolve();
      });
  }
}

/** Falling back (OpenRUM): without the shared counter each process protects itself at half the limit. */
export function fallbackRate(kind: SlotSpec['kind'], rate: number): number {
  return kind === 'FIXED_WINDOW' ? Math.max(1, Math.floor(rate / 2)) : rate / 2;
}

export function fallbackBurst(burst: number): number {
  return Math.max(1, burst / 2);
}

/** One key's slice of the shared budget, and the decisions taken from it. */
export class SharedAllowance {
  /** Units reserved in Redis and not yet used here. */
  private granted = 0;
  /** Units admitted on credit before a reply arrived, or alone while the shared budget was unreachable (admittedAlone). */
  private debt = 0;
  private inFlight = false;
  /** A reply has arrived for the current window (token bucket: ever). */
  private warm = false;
  private windowSecond = Number.NEGATIVE_INFINITY;
  /** Do not ask again before this admission time: the shared budget was spent. */
  private nextAskAtMs = Number.NEGATIVE_INFINITY;
  /** Units offered here since the last reservation was sent: the demand of one round trip. */
  private offeredSinceAsk = 0;
  /** What to ask for next, from the demand of the last round trip. */
  private wantUnits = 0;
  /** The limit the last reservation was made under. */
  private askedRate = 0;
  /** Units a batch plans to take here (see plan), at most one request's capacity, and at what admission time. */
  private plannedUnits = 0;
  private planAtMs = 0;
  private planRate = 0;
  private planBurst = 0;
  /** Units were admitted alone (admittedAlone) since the last reservation was sent: owed, and not yet on their way. */
  private aloneSinceAsk = false;
  /** Called once the reservation in flight is answered or has failed (reservePlanned waits on them). */
  private readonly settleWaiters: (() => void)[] = [];

  constructor(
    readonly key: string,
    private readonly kind: SlotSpec['kind'],
    private readonly counting: SharedCounting,
  ) {}

  /** Units held here, for the `remaining` answer. */
  get remaining(): number {
    return this.granted;
  }

  /** Takes `units` from the slice held (or on credit before the first reply); asks for more when it runs low. */
  take(units: number, at: number, rate: number, burst: number): boolean {
    if (this.kind === 'FIXED_WINDOW') this.enterWindow(Math.floor(at / 1000));
    // Spent under one limit is not spent under a larger one (an override raised, a cache refreshed): ask again.
    if (rate !== this.askedRate && this.nextAskAtMs > at) this.nextAskAtMs = Number.NEGATIVE_INFINITY;
    const slice = minimumSlice(rate, units);
    this.offeredSinceAsk += units;
    let admitted = false;
    if (this.granted >= units) {
      this.granted -= units;
      admitted = true;
    } else if (!this.warm && this.debt + units <= slice) {
      this.debt += units;
      admitted = true;
    }
    // The level to hold: what one round trip wants. Topped up by the shortfall alone once what is held falls
    // below half of it (or below this request): asking for a whole level on top of what is held let a replica
    // hold nearly two levels, which moved admissions from one window into the next.
    const level = this.wantUnits > slice ? this.wantUnits : slice;
    const held = this.granted;
    if (!this.inFlight && (held < units || 2 * held < level) && at >= this.nextAskAtMs) this.ask(rate, burst, at, level - held);
    return admitted;
  }

  private enterWindow(second: number): void {
    if (second > this.windowSecond) {
      // Slices belong to one window: what is left of the last one is not carried over.
      this.windowSecond = second;
      this.granted = 0;
      this.debt = 0;
      this.warm = false;
      this.nextAskAtMs = Number.NEGATIVE_INFINITY;
    }
  }

  /**
   * A batch will take `units` here (a request the Governor has checked fits `capacity`): adds them to what the
   * batch plans, up to one capacity. True when this is the counter's first planned request (the Governor lists it).
   * A fixed window plans for the window of the batch's first request here only.
   */
  plan(units: number, capacity: number, at: number, rate: number, burst: number): boolean {
    const first = this.plannedUnits === 0;
    if (first) {
      this.planAtMs = at;
      this.planRate = rate;
      this.planBurst = burst;
    } else if (this.kind === 'FIXED_WINDOW' && Math.floor(at / 1000) !== Math.floor(this.planAtMs / 1000)) return false;
    else if (at > this.planAtMs) this.planAtMs = at;
    const planned = this.plannedUnits + units;
    this.plannedUnits = planned < capacity ? planned : capacity;
    return first && this.plannedUnits > 0;
  }

  /**
   * Reserves what the planned batch needs beyond what is held, waiting first for a reservation already on its
   * way; resolves once the answer is in (or the reservation failed). Null when nothing needs waiting for: enough
   * is held, the shared budget was found spent until later, or the plan is for a window that has passed.
   */
  reservePlanned(): Promise<void> | null {
    const units = this.plannedUnits;
    this.plannedUnits = 0;
    if (this.kind === 'FIXED_WINDOW') {
      const second = Math.floor(this.planAtMs / 1000);
      if (second < this.windowSecond) return null;
      this.enterWindow(second);
    }
    if (!this.needsReservation(units)) return null;
    return new Promise((resolve) => this.reserveUpTo(units, resolve, true));
  }

  private needsReservation(units: number): boolean {
    // Spent under the same limit: the bucket refills the shortfall no sooner than nextAskAtMs.
    return this.granted < units && !(this.planRate === this.askedRate && this.planAtMs < this.nextAskAtMs);
  }

  private reserveUpTo(units: number, resolve: () => void, waitForInFlight: boolean): void {
    if (!this.needsReservation(units)) return resolve();
    if (this.inFlight) {
      // One wait for the reservation on its way, then one reservation of our own at most: bounded even while
      // every reservation fails.
      if (waitForInFlight) this.settleWaiters.push(() => this.reserveUpTo(units, resolve, false));
      else resolve();
      return;
    }
    this.ask(this.planRate, this.planBurst, this.planAtMs, units - this.granted);
    this.settleWaiters.push(resolve);
  }

  /** The budget was unreachable: ask for a minimum slice, unless a reservation is already on its way. */
  probe(units: number, at: number, rate: number, burst: number): void {
    if (this.kind === 'FIXED_WINDOW') this.enterWindow(Math.floor(at / 1000));
    if (!this.inFlight) this.ask(rate, burst, at, minimumSlice(rate, units));
  }

  /**
   * `units` were admitted here alone (the fallback at half the limit) at `at`. In a fixed window they are owed to
   * the shared counter of that window, as units admitted on credit are: the next reservation for the window
   * debits them (at most one limit, the script's bound). A window that has passed owes nothing any more.
   */
  admittedAlone(units: number, at: number): void {
    if (this.kind !== 'FIXED_WINDOW') return;
    const second = Math.floor(at / 1000);
    this.enterWindow(second);
    if (second !== this.windowSecond) return;
    this.debt += units;
    this.aloneSinceAsk = true;
  }

  private ask(rate: number, burst: number, at: number, wantUnits: number): void {
    this.inFlight = true;
    this.askedRate = rate;
    // What is owed belongs to the window it was taken in: a reservation for another window (an admission of an
    // earlier second, metered late) carries none of it.
    const debtUnits = this.kind === 'FIXED_WINDOW' && Math.floor(at / 1000) !== this.windowSecond ? 0 : this.debt;
    const windowSecond = this.windowSecond;
    this.offeredSinceAsk = 0;
    if (debtUnits > 0) this.aloneSinceAsk = false;
    // Units admitted alone while this reservation was on its way (the last probes of a fallback): disclosed at
    // once when it is answered, not with whatever reservation comes next, since the other replicas are granted
    // slices of the same window meanwhile.
    let discloseRest = false;
    this.counting.reserve(
      { key: this.key, kind: this.kind, ratePerSecond: rate, burst, atMs: at, wantUnits, debtUnits },
      (granted) => {
        this.wantUnits = Math.min(Math.ceil(rate / 20), 2 * this.offeredSinceAsk);
        // A slice of a window that has passed is of no use any more.
        if (this.kind === 'FIXED_WINDOW' && this.windowSecond !== windowSecond) return;
        this.debt -= debtUnits;
        discloseRest = this.aloneSinceAsk && this.debt > 0;
        this.warm = true;
        this.granted += granted;
        if (granted < wantUnits) {
          // Spent: ask again when the window turns, or when the shared bucket has refilled the shortfall (never more
          // than one burst: no request asks for more, so no answer keeps this replica from asking for longer).
          const shortfall = Math.min(wantUnits - granted, burst);
          this.nextAskAtMs = this.kind === 'FIXED_WINDOW' ? (windowSecond + 1) * 1000 : at + Math.ceil((shortfall * 1000) / rate);
        }
      },
      () => {
        this.inFlight = false;
        const waiters = this.settleWaiters;
        if (waiters.length > 0) for (const waiter of waiters.splice(0)) waiter();
        // Unless a waiter's reservation carries it already.
        if (discloseRest && !this.inFlight && this.windowSecond === windowSecond && this.debt > 0) this.ask(rate, burst, at, 0);
      },
    );
  }
}

function sharedKey(allowance: SharedCounters, charge: 'readings' | 'messages' | 'shadow-readings' | 'shadow-messages'): string {
  // The tenant name goes last: the other parts contain no ':', so no two keys can collide. It is in braces, a
  // Redis Cluster hash tag: every key of one tenant hashes to one slot (only the part up to the first '}'
  // counts, which is the same for all of one tenant's keys whatever the name holds), so a tenant's counters
  // live on one shard and move together when that shard fails over.
  return `${allowance.slot.dimension}:${allowance.slot.allowance ?? '-'}:${charge}:{${allowance.tenantId}}`;
}
