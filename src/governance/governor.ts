// The Governor: the in-process decision point every enforcement point calls. admit is synchronous and does
// no I/O: ceilings arrive through the limit cache in the background, decisions leave as per-second tallies
// that a timer hands to the Recorder in batches, and shared counters (Redis) are reserved in slices ahead of
// use. Per call it allocates only its result (and, once per new tenant or allowance, that state).
import { randomUUID } from 'node:crypto';
import { stableCallerFraction } from './callerHash.ts';
import { AdmissionBatch } from './admissionBatch.ts';
import { BURST, RATE_PER_SECOND, remainingTokens, takeTokens, tokensRetryAfterSeconds } from './allowanceNumbers.ts';
import { LimitCache } from './limitCache.ts';
import { SharedAllowance } from './sharedAllowance.ts';
import type { SharedBudget } from './sharedAllowance.ts';
import { SLOT_COUNT, slotIndexOf, SLOTS } from './slots.ts';
import type { SlotSpec } from './slots.ts';
import { TenantNames } from './tenantNames.ts';
import { TokenBucket } from './tokenBucket.ts';
import { STATUS_KNOWN } from './tenantState.ts';
import { HeldCharge, type HeldTally } from './heldCharge.ts';
import type { AllowanceNumbers } from './allowanceNumbers.ts';
import type { AllowanceState } from './allowanceState.ts';
import type { TenantState } from './tenantState.ts';
import type { Allowance, Dimension, LimitSource, LimitSourceLevel, OverLimitBehaviour, Recorder } from './types.ts';
import { RecordedInPart } from './types.ts';

export interface GovernorOptions {
  limitSource: LimitSource;
  /** Where per-second aggregates go; without one, decisions are not tallied at all. */
  recorder?: Recorder;
  /** Wall clock (ms) for cache TTLs, idle names and flushing; admissions are metered by their own `at`. */
  now?: () => number;
  /** How long read ceilings are fresh; after that they are refreshed in the background and served stale. */
  cacheTtlMs?: number;
  /** How soon a failed read of the LimitSource (or a failed Redis reservation) is tried again. */
  retryMs?: number;
  flushIntervalMs?: number;
  /** Places for unconfirmed HTTP tenant names before they share the overflow allowance. */
  maxUnconfirmedNames?: number;
  /** An unconfirmed name idle this long may give its place to a new name. */
  unconfirmedIdleMs?: number;
  loadBatchSize?: number;
  /**
   * How many admits may pass between reads of the wall clock (which only ages cache entries and idle names).
   * Reading it costs more than an admit on some hosts; the background tick reads it too.
   */
  clockReadEveryAdmits?: number;
  /**
   * Whether a repeated readings charge on a token bucket may take admit's fast path (default true). The
   * decisions and counts are the same either way (a property test compares the two); false is for that test
   * and for ruling the fast path out when diagnosing.
   */
  fastPath?: boolean;
  /** Shared counters across replicas; without it each replica meters alone. */
  sharedBudget?: SharedBudget;
  /** Faults of background work (LimitSource, Recorder, Redis). They are also counted in stats(). */
  onError?: (error: unknown, during: 'load' | 'record' | 'shared') => void;
}

export interface AdmitRequest {
  tenant: string;
  dimension: Dimension;
  /** Required for INGEST and EGRESS; absent for dimensions without allowances. */
  allowance?: Allowance | null;
  /** Weighted cost: readings, actions, requests. For charge 'message', the number of messages (usually 1). */
  units: number;
  /**
   * Unix ms the admission is metered at: arrival time for live traffic, the triggering telemetry's arrival
   * time for EGRESS, each message's send time for BACKLOG.
   */
  at: number;
  /** Identifies the caller for STABLE_DOWNSAMPLE (an SDK session, a client IP). */
  callerKey?: string;
  /**
   * 'message': the once-per-message charge before decoding (HTTP, MQTT and LwM2M allowances), against the
   * same numbers as the readings but counted separately; then charge the decoded readings with 'readings'
   * (the default). A message refused here is tallied as one shed/rejected message with 0 units.
   */
  charge?: 'readings' | 'message';
}

export type AdmitBehaviour = 'ADMIT' | OverLimitBehaviour;

export interface AdmitDecision {
  admitted: boolean;
  /** ADMIT, or what the caller does with refused traffic: SHED (drop silently), REJECT (429 / retryable),
   *  DROP_ACCEPTED (answer 202, drop), STABLE_DOWNSAMPLE (429, the caller hashed out for this window). */
  behaviour: AdmitBehaviour;
  /** The limit that decided: rate per second (fixed window: per window); half of it while Redis is down. */
  limit: number;
  remaining: number;
  /** 0 when admitted. */
  retryAfterSeconds: number;
  /**
   * The most one request can ever be granted: the bucket's burst (a fixed window's limit per window, twice it
   * under STABLE_DOWNSAMPLE), as configured, not halved during a Redis outage.
   */
  burst: number;
  /**
   * Refused because the request is larger than `burst`: no wait admits it, so a door answers "too large" (HTTP
   * 413), not "retry" (429). Tallied as rejected whatever the allowance's over-limit behaviour.
   */
  neverFits: boolean;
  /** 'overflow' when an unconfirmed HTTP name was metered on the shared overflow allowance. */
  scope: 'tenant' | 'overflow';
  source: LimitSourceLevel;
}

export interface GovernorStats {
  tenantStates: number;
  confirmedTenants: number;
  unconfirmedNames: number;
  overflowInUse: boolean;
  pendingLoads: number;
  loadFailures: number;
  recordFailures: number;
  /** Redis is configured but unreachable: each replica meters at half the limit. */
  sharedFallbackActive: boolean;
  sharedFallbackAdmissions: number;
  sharedFailures: number;
}

/** A call the Governor cannot meter: a programming fault in the caller, not an over-limit outcome. */
export class InvalidAdmission extends Error {
  override readonly name = 'InvalidAdmission';
}

/** How long after its last use the overflow allowance still counts as in use. */
const OVERFLOW_IN_USE_MS = 60_000;
const TRUSTED_SWEEP_PROBES = 64;
/** Fast-path epochs (one a second at most) before the keys start over; times the slot count stays a small integer. */
const MAX_FAST_EPOCH = 1 << 20;

/** How a refusal is tallied: 1 shed (SHED, DROP_ACCEPTED), 2 rejected (see AllowanceState.count). */
function refusedCode(behaviour: OverLimitBehaviour): number {
  return behaviour === 'SHED' || behaviour === 'DROP_ACCEPTED' ? 1 : REJECTED;
}
const REJECTED = 2;

/** How long after a flush-interval boundary the Governor ticks: the closing second's last admits land first. */
const TICK_AFTER_BOUNDARY_MS = 20;

export class Governor {
  private readonly names: TenantNames;
  private readonly cache: LimitCache;
  private readonly now: () => number;
  private readonly recorder: Recorder | null;
  private readonly shared: SharedBudget | null;
  private readonly retryMs: number;
  private readonly onError: NonNullable<GovernorOptions['onError']>;
  private readonly dirty: AllowanceState[] = [];
  private batch = new AdmissionBatch();
  /** A batch the Recorder failed to take, with the id it was offered under; offered again before anything newer. */
  private unacknowledged: { batch: AdmissionBatch; id: string } | null = null;
  private recording: Promise<void> | null = null;
  private lastRecordError: unknown = undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly flushIntervalMs: number;
  private closing = false;
  private recordFailures = 0;
  private sharedAvailable = true;
  private sharedRetryAtMs = 0;
  private sharedFailures = 0;
  private sharedFallbackAdmissions = 0;
  private lastDimension: Dimension | null = null;
  private lastAllowance: Allowance | null | undefined = null;
  private lastSlotIndex = -1;
  private reservationsInFlight = 0;
  private readonly reservationWaiters: (() => void)[] = [];
  private clockMs: number;
  private admitsSinceClockRead = 0;
  private readonly clockReadEveryAdmits: number;
  private clockSecond = Number.NaN;
  // The fast path (see admit): the key a state must hold.
  private fastEpoch = 0;
  private fastKey = -2;
  private readonly fastPathAllowed: boolean;
  private readonly states: Map<string, TenantState>;
  /** The decision being made; admit copies it into the object it returns. */
  private readonly decided: AdmitDecision = {
    admitted: false,
    behaviour: 'ADMIT',
    // Not a whole number, so V8 gives the field its double representation from the start: rates may be
    // fractional (half a limit during a Redis outage), and a later change of representation would deopt admit.
    limit: 0.5,
    remaining: 0,
    retryAfterSeconds: 0,
    burst: 0.5,
    neverFits: false,
    scope: 'tenant',
    source: 'SHIPPED_DEFAULT',
  };
  private readonly numbers: AllowanceNumbers;
  /** Set while chargeUntilSettled decides: an admitted charge is held (in `held`), not tallied. */
  private holding = false;
  private held: { allowance: AllowanceState; cause: number } | null = null;
  private readonly tallyHeld: HeldTally = (allowance, at, units, outcome, cause) => this.tally(allowance, at, units, false, outcome, cause);

  constructor(options: GovernorOptions) {
    this.now = options.now ?? Date.now;
    this.clockMs = this.now();
    this.clockReadEveryAdmits = options.clockReadEveryAdmits ?? 256;
    this.recorder = options.recorder ?? null;
    this.shared = options.sharedBudget ?? null;
    this.retryMs = options.retryMs ?? 1000;
    this.onError = options.onError ?? (() => {});
    this.names = new TenantNames(options.maxUnconfirmedNames ?? 1024, options.unconfirmedIdleMs ?? 60_000);
    this.states = this.names.states;
    this.fastPathAllowed = options.fastPath ?? true;
    this.numbers = this.names.numbers;
    this.cache = new LimitCache({
      limitSource: options.limitSource,
      now: this.now,
      ttlMs: options.cacheTtlMs ?? 30_000,
      retryMs: this.retryMs,
      batchSize: options.loadBatchSize ?? 500,
      maxConcurrentLoads: 4,
      onKnown: (state) => this.names.confirm(state.name),
      onPlatformChanged: () => this.newFastEpoch(),
      onError: (error) => this.onError(error, 'load'),
    });
    this.cache.loadPlatformDefaults();
    this.flushIntervalMs = options.flushIntervalMs ?? 1000;
    this.scheduleTick();
  }

  admit(request: AdmitRequest): AdmitDecision {
    if (++this.admitsSinceClockRead >= this.clockReadEveryAdmits) this.readClock();
    const units = request.units;
    const at = request.at;
    // The fast path: a readings charge on a token bucket, same (dimension, allowance) as the call before, for a
    // tenant whose state vouches (fastKey) that nothing else needs doing. admit is kept small so V8 inlines it
    // into the caller; both paths fill `decided` and one allocation site copies it, so a caller that reads the
    // decision without keeping it lets V8 drop the request and decision objects altogether.
    // (`x - x === 0` is false for NaN and the infinities.)
    const state =
      request.dimension === this.lastDimension && request.allowance === this.lastAllowance && request.charge !== 'message'
        ? this.states.get(request.tenant)
        : undefined;
    if (state !== undefined && state.fastKey === this.fastKey && units >= 0 && units - units === 0 && at - at === 0) {
      this.admitFast(state, units, at);
    } else {
      this.admitFully(request.tenant, request.dimension, request.allowance, units, at, request.callerKey, request.charge);
    }
    const out = this.decided;
    return {
      admitted: out.admitted,
      behaviour: out.behaviour,
      limit: out.limit,
      remaining: out.remaining,
      retryAfterSeconds: out.retryAfterSeconds,
      burst: out.burst,
      neverFits: out.neverFits,
      scope: out.scope,
      source: out.source,
    };
  }

  /** A readings charge on the token bucket of the state's last allowance (into `decided`). */
  private admitFast(state: TenantState, units: number, at: number): void {
    const numbers = this.numbers.values;
    const cell = state.cell;
    const rate = numbers[cell + RATE_PER_SECOND]!;
    const burst = numbers[cell + BURST]!;
    const admitted = takeTokens(numbers, cell, units, at, rate, burst);
    const neverFits = !admitted && units > burst;
    // A vouched state's slot is the one used last.
    const refusal = admitted ? null : SLOTS[this.lastSlotIndex]!.overLimit;
    if (this.recorder !== null) this.tally(state.lastAllowance!, at, units, false, refusal === null ? 0 : neverFits ? REJECTED : refusedCode(refusal), -1);
    const out = this.decided;
    out.admitted = admitted;
    out.behaviour = refusal ?? 'ADMIT';
    out.limit = rate;
    out.remaining = remainingTokens(numbers, cell);
    out.retryAfterSeconds = admitted ? 0 : tokensRetryAfterSeconds(numbers, cell, units, rate, burst);
    out.burst = burst;
    out.neverFits = neverFits;
    out.scope = 'tenant';
    out.source = state.source;
  }

  /** Every case (into `decided`): validation, new names, unknown ceilings, message charges, fixed windows, shared counters. */
  private admitFully(
    tenant: string,
    dimension: Dimension,
    allowanceName: Allowance | null | undefined,
    units: number,
    at: number,
    callerKey: string | undefined,
    charge: AdmitRequest['charge'],
  ): void {
    // Callers repeat the same (dimension, allowance) pair in runs: two pointer checks instead of a scan.
    let slotIndex = this.lastSlotIndex;
    if (dimension !== this.lastDimension || allowanceName !== this.lastAllowance) {
      slotIndex = slotIndexOf(dimension, allowanceName);
      this.lastDimension = dimension;
      this.lastAllowance = allowanceName;
      this.lastSlotIndex = slotIndex;
      this.setFastKey();
    }
    if (slotIndex < 0) {
      throw new InvalidAdmission(`${dimension} is not metered by admit with allowance ${String(allowanceName)}`);
    }
    if (!(units >= 0 && units < Infinity) || !(at > -Infinity && at < Infinity)) {
      throw new InvalidAdmission(`units (${units}) and at (${at}) must be finite, units not negative`);
    }
    const slot = SLOTS[slotIndex]!;
    const byMessage = charge === 'message';
    if (byMessage && !slot.messageCharged) {
      throw new InvalidAdmission(`${slot.dimension}/${String(slot.allowance)} is not charged per message`);
    }
    const nowMs = this.clockMs;
    const names = this.names;
    let state = this.states.get(tenant);
    if (slot.allowance === 'HTTP') {
      if (state === undefined) state = names.forHttp(tenant, nowMs, state);
    } else if (state === undefined || !state.trusted) state = names.forTrusted(tenant, state);
    // Only unconfirmed names are ever evicted as idle; skipping the store spares a confirmed tenant a write.
    if (!state.confirmed) state.lastSeenMs = nowMs;
    this.cache.refreshIfDue(state, nowMs);
    const known = state.status === STATUS_KNOWN;
    const limits = !known
      ? this.cache.platformLimits
      : state.limitsVersion === this.cache.platformVersion && state.limits !== null
        ? state.limits
        : this.cache.limitsOf(state);
    const allowance = state.allowance(slotIndex, limits);
    // Read after allowance(), which may have grown the store.
    const numbers = this.numbers.values;
    const cell = state.cell;
    let rate = numbers[cell + RATE_PER_SECOND]!;
    let burst = numbers[cell + BURST]!;
    const downsample = state.downsample;
    const behaviour: OverLimitBehaviour = downsample ? 'STABLE_DOWNSAMPLE' : slot.overLimit;
    // What one request can ever get, from the configured numbers (before a Redis outage halves them).
    const capacity = slot.kind === 'FIXED_WINDOW' ? (downsample ? 2 * rate : rate) : burst;

    let sharedActive = false;
    if (this.shared !== null) {
      sharedActive = this.sharedAvailable;
      if (!sharedActive) {
        // OpenRUM: without the shared counter each process protects itself at half the limit.
        rate = slot.kind === 'FIXED_WINDOW' ? Math.max(1, Math.floor(rate / 2)) : rate / 2;
        burst = Math.max(1, burst / 2);
        if (nowMs >= this.sharedRetryAtMs) this.probeShared(allowance, slot, byMessage, rate * 2, burst * 2, at, units);
      }
    }

    let admitted: boolean;
    let remaining: number;
    let retryAfterSeconds = 0;
    if (sharedActive) {
      const shared = this.sharedOf(allowance, byMessage);
      if (downsample) {
        // STABLE_DOWNSAMPLE across replicas: callers hashed out never reach the shared budget; kept ones are
        // charged there, so the shared limit holds, and cuts there tighten the next window's keep fraction.
        const window = allowance.window!;
        const fraction = stableCallerFraction(callerKey ?? tenant);
        const kept = window.keeps(units, Math.floor(at / 1000), rate, fraction);
        admitted = kept && this.takeShared(shared, slot, units, at, rate, burst);
        if (kept) window.sharedOutcome(units, admitted);
      } else {
        admitted = this.takeShared(shared, slot, units, at, rate, burst);
      }
      remaining = shared.granted;
      if (!admitted) retryAfterSeconds = Math.max(1, Math.ceil(units / rate));
    } else if (slot.kind === 'TOKEN_BUCKET' && !byMessage) {
      admitted = takeTokens(numbers, cell, units, at, rate, burst);
      remaining = remainingTokens(numbers, cell);
      if (!admitted) retryAfterSeconds = tokensRetryAfterSeconds(numbers, cell, units, rate, burst);
    } else if (slot.kind === 'TOKEN_BUCKET') {
      const bucket = (allowance.messageBucket ??= new TokenBucket());
      admitted = bucket.take(units, at, rate, burst);
      remaining = bucket.remaining();
      if (!admitted) retryAfterSeconds = bucket.retryAfterSeconds(units, rate, burst);
    } else {
      const window = allowance.window!;
      const second = Math.floor(at / 1000);
      admitted = downsample
        ? window.takeDownsampled(units, second, rate, stableCallerFraction(callerKey ?? tenant))
        : window.takeExact(units, second, rate);
      remaining = window.remaining(rate);
      if (!admitted) retryAfterSeconds = window.retryAfterSeconds(at);
    }
    if (admitted && this.shared !== null && !sharedActive) this.sharedFallbackAdmissions++;
    const neverFits = !admitted && units > capacity;
    if (this.recorder !== null) {
      const refused = admitted ? 0 : neverFits ? REJECTED : refusedCode(behaviour);
      const cause = known || state.isOverflow ? -1 : state.status;
      // A held charge (chargeUntilSettled) is tallied when the caller settles it; a refusal is final at once.
      if (refused === 0 && this.holding) this.held = { allowance, cause };
      else this.tally(allowance, at, units, byMessage, refused, cause);
    }
    this.vouch(state, known);
    const out = this.decided;
    out.admitted = admitted;
    out.behaviour = admitted ? 'ADMIT' : behaviour;
    out.limit = rate;
    out.remaining = remaining;
    out.retryAfterSeconds = retryAfterSeconds;
    out.burst = capacity;
    out.neverFits = neverFits;
    out.scope = state.isOverflow ? 'overflow' : 'tenant';
    out.source = state.source;
  }

  /**
   * A readings charge whose fate the caller learns only later: the HTTP ingest door charges readings before
   * it checks the credential and hands them to the sink (the spec's order). Decided as admit decides; a
   * refusal is tallied at once, an admission only when the caller settles it (HeldCharge.settle): admitted,
   * unauthenticated (a 401 after the charge: counted apart, never as admitted), or withdrawn (the service
   * failed to take them, a 503, or another limit refused the request: not counted). The tokens stay spent
   * either way, so a flood of unauthenticated or retried requests is still bounded by the allowance.
   * Not the hot path: it allocates the held charge.
   */
  chargeUntilSettled(request: AdmitRequest): HeldCharge<AdmitDecision> {
    if (request.charge === 'message') throw new InvalidAdmission('only a readings charge is held until settled');
    if (++this.admitsSinceClockRead >= this.clockReadEveryAdmits) this.readClock();
    this.holding = true;
    this.held = null;
    try {
      this.admitFully(request.tenant, request.dimension, request.allowance, request.units, request.at, request.callerKey, request.charge);
    } finally {
      this.holding = false;
    }
    // (Read through a method: the compiler would keep `held` narrowed to the null set above.)
    const held = this.takeHeld();
    return new HeldCharge({ ...this.decided }, held === null ? null : { ...held, at: request.at, units: request.units, tally: this.tallyHeld });
  }

  private takeHeld(): { allowance: AllowanceState; cause: number } | null {
    const held = this.held;
    this.held = null;
    return held;
  }

  /** Whether this state's next admits on the same slot may take the fast path (see TenantState.fastKey). */
  private vouch(state: TenantState, known: boolean): void {
    state.fastKey = this.fastKey >= 0 && known && state.confirmed && !state.isOverflow ? this.fastKey : -1;
  }

  /** The fast-path key of the slot used last: -2 (matching no state) unless it is a token bucket metered alone. */
  private setFastKey(): void {
    const slot = this.lastSlotIndex >= 0 ? SLOTS[this.lastSlotIndex]! : null;
    const eligible = this.fastPathAllowed && slot !== null && slot.kind === 'TOKEN_BUCKET' && this.shared === null;
    this.fastKey = eligible ? this.fastEpoch * SLOT_COUNT + slot.index : -2;
  }

  /**
   * Voids every state's fast-path key: on each new wall-clock second (so each tenant's refresh-due time is
   * checked at least once a second) and when the platform defaults change.
   */
  private newFastEpoch(): void {
    if (++this.fastEpoch >= MAX_FAST_EPOCH) {
      // Keys must never repeat while a state still holds an old one.
      this.fastEpoch = 0;
      for (const state of this.states.values()) state.fastKey = -1;
    }
    this.setFastKey();
  }

  /** The control plane registered this tenant: it keeps an allowance of its own on HTTP. */
  confirmTenant(name: string): void {
    this.names.confirm(name);
  }

  /** Whether the name is a tenant the control plane registered (or the LimitSource knows), not one a sender made up. */
  isConfirmed(name: string): boolean {
    return this.states.get(name)?.confirmed === true;
  }

  get overflowInUse(): boolean {
    return this.now() - this.names.overflowLastUsedMs < OVERFLOW_IN_USE_MS;
  }

  stats(): GovernorStats {
    return {
      tenantStates: this.names.states.size,
      confirmedTenants: this.names.confirmedCount,
      unconfirmedNames: this.names.unconfirmedCount,
      overflowInUse: this.overflowInUse,
      pendingLoads: this.cache.pendingLoads,
      loadFailures: this.cache.loadFailures,
      recordFailures: this.recordFailures,
      sharedFallbackActive: this.shared !== null && !this.sharedAvailable,
      sharedFallbackAdmissions: this.sharedFallbackAdmissions,
      sharedFailures: this.sharedFailures,
    };
  }

  /** Resolves when no LimitSource read is queued or running. */
  loadsSettled(): Promise<void> {
    return this.cache.settled();
  }

  /** Resolves when no shared-budget reservation is on its way to or from Redis. */
  reservationsSettled(): Promise<void> {
    if (this.reservationsInFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.reservationWaiters.push(resolve));
  }

  /** Hands every tally, the current second included, to the Recorder and waits for it. */
  async flush(): Promise<void> {
    await this.record(true);
    if (this.lastRecordError !== undefined) {
      const error = this.lastRecordError;
      this.lastRecordError = undefined;
      throw error;
    }
  }

  /** Stops the timer and flushes; rejects if the Recorder could not take the last batch. */
  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.timer);
    await this.flush();
  }

  private readClock(): void {
    this.admitsSinceClockRead = 0;
    this.clockMs = this.now();
    const second = Math.floor(this.clockMs / 1000);
    if (second !== this.clockSecond) {
      this.clockSecond = second;
      this.newFastEpoch();
    }
    this.cache.refreshPlatformIfDue(this.clockMs);
  }

  /**
   * Ticks just after each boundary of the flush interval (wall clock), so a second's decisions go to the
   * Recorder as soon as the second is over: a process killed outright (SIGKILL) loses at most the decisions of
   * the interval under way and of a batch whose append had not committed yet.
   */
  private scheduleTick(): void {
    if (this.closing) return;
    const interval = this.flushIntervalMs;
    this.timer = setTimeout(() => {
      this.tick();
      this.scheduleTick();
    }, interval - (Date.now() % interval) + TICK_AFTER_BOUNDARY_MS);
    this.timer.unref();
  }

  private tick(): void {
    this.readClock();
    this.names.sweepTrusted(this.clockMs, TRUSTED_SWEEP_PROBES);
    // A slow Recorder is not queued behind: its windows keep merging until it is free again.
    if (this.recording === null) void this.record(false);
  }

  private async record(includeCurrentSecond: boolean): Promise<void> {
    while (this.recording !== null) await this.recording;
    this.collect(includeCurrentSecond);
    if (this.recorder === null) return;
    if (this.batch.isEmpty && this.unacknowledged === null) return;
    this.recording = this.deliver(this.recorder).finally(() => {
      this.recording = null;
    });
    await this.recording;
  }

  /**
   * Offers the batch the Recorder failed to take, if any, again under its id and unchanged, then the batch
   * collected since. A failure may hide an append that did commit (the connection dropped before its
   * acknowledgement): the same id lets the Recorder store it once. What is counted meanwhile merges into the
   * next batch, so memory stays bounded by active keys however long the ledger is away.
   */
  private async deliver(recorder: Recorder): Promise<void> {
    try {
      if (this.unacknowledged !== null) {
        const { batch, id } = this.unacknowledged;
        await recorder.record([...batch.admissions.values()], [...batch.unresolved.values()], id);
        this.unacknowledged = null;
      }
      if (!this.batch.isEmpty) {
        const batch = this.batch;
        this.batch = new AdmissionBatch();
        this.unacknowledged = { batch, id: randomUUID() };
        await recorder.record([...batch.admissions.values()], [...batch.unresolved.values()], this.unacknowledged.id);
        this.unacknowledged = null;
      }
      this.lastRecordError = undefined;
    } catch (error) {
      // Part of the batch was stored before the failure: keep only the rest, under a new id (its events are
      // new ones; the stored part's ids must not be reused for them).
      if (error instanceof RecordedInPart && this.unacknowledged !== null) {
        this.unacknowledged.batch.forget(error.admissions, error.unresolved);
        this.unacknowledged = this.unacknowledged.batch.isEmpty ? null : { batch: this.unacknowledged.batch, id: randomUUID() };
      }
      this.recordFailures++;
      this.lastRecordError = error;
      this.onError(error, 'record');
    }
  }

  private collect(includeCurrentSecond: boolean): void {
    const nowSecond = Math.floor(this.now() / 1000);
    let kept = 0;
    for (const allowance of this.dirty) {
      if (includeCurrentSecond || allowance.openSecond < nowSecond) allowance.closeOpenSecond();
      const closed = allowance.closed;
      if (closed !== null && closed.decisions > 0) {
        this.batch.add(allowance, closed);
        closed.clear();
      }
      if (allowance.openDecisions > 0) this.dirty[kept++] = allowance;
      else allowance.dirty = false;
    }
    this.dirty.length = kept;
  }

  /** `refused`: an outcome code of AllowanceState.count (0 admitted, 1 shed, 2 rejected, 3 unauthenticated). */
  private tally(allowance: AllowanceState, at: number, units: number, byMessage: boolean, refused: number, cause: number): void {
    // A message admitted before decoding is counted by the readings charge that follows it.
    if (byMessage && refused === 0) return;
    const becameDirty = allowance.count(Math.floor(at / 1000), byMessage ? 0 : units, byMessage ? units : 1, refused, cause);
    if (becameDirty) this.dirty.push(allowance);
  }

  private sharedOf(allowance: AllowanceState, byMessage: boolean): SharedAllowance {
    if (byMessage) return (allowance.sharedMessages ??= new SharedAllowance(sharedKey(allowance, 'messages')));
    return (allowance.sharedReadings ??= new SharedAllowance(sharedKey(allowance, 'readings')));
  }

  private takeShared(shared: SharedAllowance, slot: SlotSpec, units: number, at: number, rate: number, burst: number): boolean {
    if (slot.kind === 'FIXED_WINDOW') {
      const second = Math.floor(at / 1000);
      if (second > shared.windowSecond) {
        // Slices belong to one window: what is left of the last one is not carried over.
        shared.windowSecond = second;
        shared.granted = 0;
        shared.debt = 0;
        shared.warm = false;
        shared.nextAskAtMs = Number.NEGATIVE_INFINITY;
      }
    }
    const slice = Math.max(Math.ceil(rate / 100), units);
    shared.offeredSinceAsk += units;
    let admitted = false;
    if (shared.granted >= units) {
      shared.granted -= units;
      admitted = true;
    } else if (!shared.warm && shared.debt + units <= slice) {
      shared.debt += units;
      admitted = true;
    }
    const wantUnits = shared.wantUnits > slice ? shared.wantUnits : slice;
    if (!shared.inFlight && shared.granted < wantUnits && at >= shared.nextAskAtMs) {
      this.reserve(shared, slot, rate, burst, at, wantUnits);
    }
    return admitted;
  }

  private probeShared(
    allowance: AllowanceState,
    slot: SlotSpec,
    byMessage: boolean,
    rate: number,
    burst: number,
    at: number,
    units: number,
  ): void {
    this.sharedRetryAtMs = this.now() + this.retryMs;
    const shared = this.sharedOf(allowance, byMessage);
    if (!shared.inFlight) this.reserve(shared, slot, rate, burst, at, Math.max(Math.ceil(rate / 100), units));
  }

  private reserve(shared: SharedAllowance, slot: SlotSpec, rate: number, burst: number, at: number, wantUnits: number): void {
    shared.inFlight = true;
    this.reservationsInFlight++;
    const debtUnits = shared.debt;
    const windowSecond = shared.windowSecond;
    shared.offeredSinceAsk = 0;
    this.shared!.reserve({ key: shared.key, kind: slot.kind, ratePerSecond: rate, burst, atMs: at, wantUnits, debtUnits })
      .then(
        (granted) => {
          this.sharedAvailable = true;
          shared.wantUnits = Math.min(Math.ceil(rate / 20), 2 * shared.offeredSinceAsk);
          // A slice of a window that has passed is of no use any more.
          if (slot.kind === 'FIXED_WINDOW' && shared.windowSecond !== windowSecond) return;
          shared.debt -= debtUnits;
          shared.warm = true;
          shared.granted += granted;
          if (granted < wantUnits) {
            // Spent: ask again when the window turns, or when the shared bucket has refilled the shortfall.
            shared.nextAskAtMs =
              slot.kind === 'FIXED_WINDOW' ? (windowSecond + 1) * 1000 : at + Math.ceil(((wantUnits - granted) * 1000) / rate);
          }
        },
        (error: unknown) => {
          this.sharedFailures++;
          if (this.sharedAvailable) {
            this.sharedAvailable = false;
            this.sharedRetryAtMs = this.now() + this.retryMs;
          }
          this.onError(error, 'shared');
        },
      )
      .finally(() => {
        shared.inFlight = false;
        if (--this.reservationsInFlight === 0) for (const resolve of this.reservationWaiters.splice(0)) resolve();
      });
  }
}

function sharedKey(allowance: AllowanceState, charge: 'readings' | 'messages'): string {
  // The tenant name goes last: the other parts contain no ':', so no two keys can collide.
  return `${allowance.slot.dimension}:${allowance.slot.allowance ?? '-'}:${charge}:${allowance.tenantId}`;
}

