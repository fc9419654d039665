// The Governor: the in-process decision point every enforcement point calls. admit is synchronous and does
// no I/O. It coordinates: TenantNames says which names get a meter of their own, the LimitCache learns
// ceilings in the background, the meters' token buckets and fixed windows decide, SharedCounting takes the
// decision from slices of the shared budget (Redis) reserved ahead of use, and Tallies hands per-second
// counts to the Recorder on a timer. admit allocates only its result, decide and hold nothing (and, once per
// new tenant or allowance, that state).
import { BURST, RATE_PER_SECOND, SHADOW_BURST, SHADOW_RATE_PER_SECOND, TALLY_MESSAGES, TALLY_SECOND, TALLY_UNITS } from './allowanceNumbers.ts';
import { DECISION_AT, DECISION_UNITS, OUTCOME_QUOTA, OUTCOME_SHADOW_LIMITED } from './allowanceState.ts';
import type { AllowanceNumbers } from './allowanceNumbers.ts';
import type { AllowanceState } from './allowanceState.ts';
import { stableCallerFraction } from './callerHash.ts';
import { windowKeeps, windowRemaining, windowRetryAfterSeconds, windowSharedOutcome, windowTakeDownsampled, windowTakeExact } from './fixedWindow.ts';
import { LimitCache } from './limitCache.ts';
import { DecidedCharge, type HeldCharge, type HeldTally } from './heldCharge.ts';
import { fallbackBurst, fallbackRate, SharedCounting } from './sharedCounting.ts';
import type { SharedAllowance, SharedBudget } from './sharedCounting.ts';
import { DEFAULT_QUOTA_THRESHOLDS, QUOTA_ADMITTED, QUOTA_SPENT, QuotaSharing } from './quotaMeter.ts';
import { setsAnyQuota } from './quotaValue.ts';
import type { QuotaBudget, QuotaMeter, QuotaThresholdCrossing } from './quotaMeter.ts';
import type { QuotaPeriod } from './types.ts';
import { SLOT_COUNT, slotIndexOf, SLOTS, type SlotSpec } from './slots.ts';
import { Tallies } from './tallies.ts';
import { TenantNames } from './tenantNames.ts';
import { STATUS_KNOWN, STATUS_PENDING } from './tenantMeter.ts';
import type { TenantMeter } from './tenantMeter.ts';
import { LAST_MS, remainingTokens, takeTokens, TOKENS, TokenBucket, tokensRetryAfterSeconds } from './tokenBucket.ts';
import type {
  Allowance,
  Dimension,
  LimitReload,
  LimitSource,
  LimitSourceLevel,
  OverLimitBehaviour,
  Recorder,
  TenantGovernanceRecord,
} from './types.ts';

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
  /**
   * How often tallies go to the Recorder (default 1000 ms); also the most seconds one summary spans, rounded up
   * to whole seconds (tallies.ts).
   */
  flushIntervalMs?: number;
  /**
   * Summaries the batch waiting for the Recorder may hold before a key's new windows are clamped into its
   * latest one (default MAX_PENDING_SUMMARIES, 250,000; see tallies.ts). Bounds memory through a ledger outage.
   */
  maxPendingSummaries?: number;
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
  /**
   * Where period quotas are counted across replicas when the sharedBudget counts none (no Redis): the
   * database's budget (src/quotas). Reserved off the hot path, in slices, as Redis' are (quotaMeter.ts).
   */
  quotaBudget?: QuotaBudget;
  /** Percentages of a period quota noticed the first time they are reached in a period (default 50, 80, 100). */
  quotaThresholds?: readonly number[];
  /**
   * A quota threshold reached for the first time this period on this replica (several replicas may each notice
   * one: the ledger keeps one per tenant, dimension, period and threshold). Called synchronously from admit or a
   * Redis answer: keep it short, hand the work on.
   */
  onQuotaThreshold?: (crossing: QuotaThresholdCrossing) => void;
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
  /**
   * The tenant name is not vouched for by an authenticated sender (Envoy's RLS: a gateway passes on what its
   * client sent): an unconfirmed name gets one of the places for unconfirmed names or shares the overflow
   * allowance, as on the HTTP allowance, instead of state of its own. Implied on the HTTP allowance.
   */
  untrustedName?: boolean;
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
  /**
   * Refused for the tenant's period quota, not its rate (docs/governance-model.md, "Period quotas"): behaviour
   * REJECT, `limit` the quota's units per period, `retryAfterSeconds` the time to the period's end. Always set
   * by the Governor; optional for decisions made elsewhere (a leasing client's).
   */
  quotaExceeded?: boolean;
  /** The refusing quota's period when `quotaExceeded` (the Envoy RLS answer's unit), else null. */
  quotaPeriod?: QuotaPeriod | null;
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
  /**
   * Tallies whose seconds were clamped into an earlier window of their key because the batch waiting for
   * the Recorder was full (a long ledger outage; see tallies.ts). 0 while the ledger keeps up.
   */
  clampedTallies: number;
}

/** A call the Governor cannot meter: a programming fault in the caller, not an over-limit outcome. */
export class InvalidAdmission extends Error {
  override readonly name = 'InvalidAdmission';
}

/** Where takeRequestNumbers puts a request's numbers for decideInto (Governor.requestNumbers). */
const REQUEST_AT = 0;
const REQUEST_UNITS = 1;

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

/**
 * What one request can ever get, from the configured numbers (before a Redis outage halves them): the burst, or a
 * fixed window's limit (twice it under STABLE_DOWNSAMPLE). A larger request never fits; it is never planned on,
 * nor charged to, the shared budget.
 */
function requestCapacity(kind: SlotSpec['kind'], downsample: boolean, rate: number, burst: number): number {
  return kind === 'FIXED_WINDOW' ? (downsample ? 2 * rate : rate) : burst;
}

/** Reservations at most under way to give tenants' quotas their first slice (Governor.warmQuotas). */
const QUOTA_WARM_UPS_IN_FLIGHT = 16;

export class Governor {
  private readonly names: TenantNames;
  private readonly cache: LimitCache;
  private readonly now: () => number;
  /** Without a shared budget, null: each replica meters alone. */
  private readonly shared: SharedCounting | null;
  private readonly tallies: Tallies;
  /** Whether decisions are tallied (there is a Recorder): checked before anything is computed for a tally. */
  private readonly counting: boolean;
  // The (dimension, allowance) pair of the call before and its slot: callers repeat pairs in runs.
  private lastDimension: Dimension | null = null;
  private lastAllowance: Allowance | null | undefined = null;
  private lastSlotIndex = -1;
  // The wall clock, read once every `clockReadEveryAdmits` admits and on each tick.
  private clockMs: number;
  private admitsSinceClockRead = 0;
  private readonly clockReadEveryAdmits: number;
  private clockSecond = Number.NaN;
  // The fast path (see admit): the key a state must hold.
  private fastEpoch = 0;
  private fastKey = -2;
  private readonly fastPathAllowed: boolean;
  /** TenantNames' map, looked up directly by admit. */
  private readonly states: Map<string, TenantMeter>;
  /**
   * Whether `decided` holds the fields every fast-path admission shares (admitted, ADMIT, no retry, ...), so
   * that the fast path writes only its limit, remaining, burst and source. Every other decision clears it.
   */
  private decidedFastAdmission = false;
  /** The numbers of the request being decided (takeRequestNumbers), unboxed. */
  private readonly requestNumbers = new Float64Array(2);
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
    quotaExceeded: false,
    quotaPeriod: null,
  };
  private readonly quotaSharing: QuotaSharing;
  /** Tenants whose quotas get a first slice before their first request (warmQuotas), from quotaWarmUpsHead on. */
  private readonly quotaWarmUps: TenantMeter[] = [];
  private quotaWarmUpsHead = 0;
  private readonly numbers: AllowanceNumbers;
  /** Set while chargeUntilSettled decides: an admitted charge is held (in `heldAllowance`, `heldCause`), not tallied. */
  private holding = false;
  private heldAllowance: AllowanceState | null = null;
  private heldCause = -1;
  /** The quota a held admission took its units from (given back unless it is settled as admitted). */
  private heldQuota: QuotaMeter | null = null;
  /** Shared counters a batch has planned requests on, until reservePlanned. */
  private readonly planned: SharedAllowance[] = [];
  private readonly tallyHeld: HeldTally = (allowance, at, units, outcome, cause) => {
    this.takeDecisionNumbers(at, units);
    this.tallies.count(allowance, false, outcome, cause);
  };

  constructor(options: GovernorOptions) {
    this.now = options.now ?? Date.now;
    this.clockMs = this.now();
    this.clockReadEveryAdmits = options.clockReadEveryAdmits ?? 256;
    const retryMs = options.retryMs ?? 1000;
    const onError = options.onError ?? (() => {});
    this.names = new TenantNames(options.maxUnconfirmedNames ?? 1024, options.unconfirmedIdleMs ?? 60_000);
    this.states = this.names.states;
    this.fastPathAllowed = options.fastPath ?? true;
    this.numbers = this.names.numbers;
    this.cache = new LimitCache({
      limitSource: options.limitSource,
      now: this.now,
      ttlMs: options.cacheTtlMs ?? 30_000,
      retryMs,
      batchSize: options.loadBatchSize ?? 500,
      maxConcurrentLoads: 4,
      onKnown: (state) => {
        this.names.confirm(state.name);
        this.warmQuotas(state);
      },
      onPlatformChanged: () => this.newFastEpoch(),
      onError: (error) => onError(error, 'load'),
    });
    this.shared = options.sharedBudget
      ? new SharedCounting(options.sharedBudget, { now: this.now, retryMs, onError: (error) => onError(error, 'shared') })
      : null;
    const budget = options.sharedBudget;
    this.quotaSharing = new QuotaSharing(
      budget?.reserveQuota ? { reserveQuota: (request) => budget.reserveQuota!(request) } : (options.quotaBudget ?? null),
      (error) => onError(error, 'shared'),
      options.quotaThresholds ?? DEFAULT_QUOTA_THRESHOLDS,
      options.onQuotaThreshold ?? null,
    );
    this.quotaSharing.onSettled = () => this.pumpQuotaWarmUps();
    this.cache.loadPlatformDefaults();
    this.counting = options.recorder !== undefined;
    this.tallies = new Tallies({
      recorder: options.recorder ?? null,
      now: this.now,
      flushIntervalMs: options.flushIntervalMs ?? 1000,
      ...(options.maxPendingSummaries !== undefined ? { maxPendingSummaries: options.maxPendingSummaries } : {}),
      onTick: () => {
        this.readClock();
        this.names.sweepTrusted(this.clockMs, TRUSTED_SWEEP_PROBES);
      },
      onError: (error) => onError(error, 'record'),
    });
  }

  admit(request: AdmitRequest): AdmitDecision {
    // The request's fields are read here, its numbers kept unboxed: decideInto is never inlined (see there), so
    // admit stays small with all it inlines, and V8 inlines it into its caller: a caller that reads the decision
    // without keeping it allocates neither the request nor the decision (copyOfDecided, inlined here).
    this.takeRequestNumbers(request);
    this.decideInto(request.tenant, request.dimension, request.allowance, request.charge, request.callerKey, request.untrustedName);
    return this.copyOfDecided();
  }

  /**
   * The request's numbers into `requestNumbers`, where decideInto reads them: passed as arguments to a call V8
   * does not inline, a number that is not a small integer (every `at`) would be boxed, one allocation a call.
   */
  private takeRequestNumbers(request: AdmitRequest): void {
    const numbers = this.requestNumbers;
    numbers[REQUEST_AT] = request.at;
    numbers[REQUEST_UNITS] = request.units;
  }

  /**
   * admit without the copy: the Governor's own record of the decision, overwritten by its next call. For a
   * caller that reads the decision at once and keeps nothing of it (a door, once or more per request): the
   * call allocates nothing.
   */
  decide(request: AdmitRequest): Readonly<AdmitDecision> {
    this.takeRequestNumbers(request);
    this.decideInto(request.tenant, request.dimension, request.allowance, request.charge, request.callerKey, request.untrustedName);
    return this.decided;
  }

  /**
   * Decides into `decided` (the request's units and at in `requestNumbers`), on the fast path when it can: a
   * readings charge on a token bucket, same (dimension, allowance) as the call before, for a tenant whose state
   * vouches (fastKey) that nothing else needs doing; then every other case (validation, new names, unknown
   * ceilings, message charges, fixed windows, shared counters). One method, over V8's limit for a function it
   * inlines (460 bytes of bytecode), on purpose: V8 never inlines it, so admit, which calls it with the request's
   * other fields (strings, never a number V8 would box), inlines into its caller whatever the fast path's size
   * (src/governance/README.md, "Hot path").
   */
  private decideInto(
    tenant: string,
    dimension: Dimension,
    allowanceName: Allowance | null | undefined,
    charge: AdmitRequest['charge'],
    callerKey: string | undefined,
    untrustedName: boolean | undefined,
  ): void {
    const requestNumbers = this.requestNumbers;
    const units = requestNumbers[REQUEST_UNITS]!;
    const at = requestNumbers[REQUEST_AT]!;
    if (++this.admitsSinceClockRead >= this.clockReadEveryAdmits) this.readClock();
    // (`x - x === 0` is false for NaN and the infinities.)
    const lookedUp = dimension === this.lastDimension && allowanceName === this.lastAllowance && charge !== 'message';
    const vouched = lookedUp ? this.states.get(tenant) : undefined;
    if (vouched !== undefined && vouched.fastKey === this.fastKey && units >= 0 && units - units === 0 && at - at === 0) {
      // The fast path: a readings charge on the token bucket of the state's last allowance. It makes no call that
      // takes a number: a number passed to a call V8 leaves out of line is boxed, an allocation a call, and which
      // calls V8 inlines into this method depends on the feedback of the moment (in the bench, the full path's
      // calls came first and used up the budget). So takeTokens (tokenBucket.ts) and the cell's tally are written
      // out here (fastPath.test.ts holds them to the full path's decisions and counts), and a refusal and an
      // admission the cell cannot tally go out of line reading their numbers from requestNumbers.
      const numbers = this.numbers.values;
      const cell = vouched.cell;
      const rate = numbers[cell + RATE_PER_SECOND]!;
      const burst = numbers[cell + BURST]!;
      const lastMs = numbers[cell + LAST_MS]!;
      // tokensAt: a bucket not started (NaN) starts full; time never goes back (laterMs).
      let tokens = numbers[cell + TOKENS]!;
      if (lastMs !== lastMs) tokens = burst;
      else {
        if (at > lastMs) tokens += ((at - lastMs) * rate) / 1000;
        if (!(tokens < burst)) tokens = burst;
      }
      numbers[cell + LAST_MS] = at <= lastMs ? lastMs : at;
      if (!(tokens >= units)) {
        numbers[cell + TOKENS] = tokens;
        this.refuseFast(vouched);
        return;
      }
      tokens -= units;
      numbers[cell + TOKENS] = tokens;
      if (this.counting) {
        // Tallied for the ledger in the allowance's cell when the admission lies in the second the cell counts
        // (AllowanceState's TALLY_SECOND: its open second, or the one a flush armed): a compare and two adds on
        // the cache line the decision just read. Otherwise (a held charge, another second) out of line.
        if (!this.holding && Math.floor(at / 1000) === numbers[cell + TALLY_SECOND]) {
          numbers[cell + TALLY_MESSAGES]!++;
          numbers[cell + TALLY_UNITS]! += units;
        } else this.tallyFastAdmission(vouched);
      }
      // The fields every fast admission shares are written once, after another kind of decision.
      if (!this.decidedFastAdmission) this.decideFastAdmission();
      const out = this.decided;
      out.limit = rate;
      out.remaining = tokens > 0 ? Math.floor(tokens) : 0;
      out.burst = burst;
      out.source = vouched.source;
      return;
    }
    // The full path.
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
    // The state the fast path looked up, when it did (nothing between changes the map): a tenant's first decision
    // of each second comes here (a new second voids every fast key), and a second look-up of a map of 50,000
    // tenants was 2-3 % of the admitting thread's time at 50,000 active tenants (bench/RESULTS.md, 2026-12-06 17:50).
    let state = lookedUp ? vouched : this.states.get(tenant);
    if (slot.allowance === 'HTTP' || untrustedName) {
      if (state === undefined) state = names.forHttp(tenant, nowMs, state);
    } else if (state === undefined || !state.trusted) state = names.forTrusted(tenant, state);
    // Only unconfirmed names are ever evicted as idle; skipping the store spares a confirmed tenant a write.
    if (!state.confirmed) state.lastSeenMs = nowMs;
    this.cache.refreshIfDue(state, nowMs);
    const known = state.status === STATUS_KNOWN;
    const limits = this.limitsOf(state);
    const allowance = state.allowance(slotIndex, limits);
    // Read after allowance(), which may have grown the store.
    const numbers = this.numbers.values;
    const cell = state.cell;
    let rate = numbers[cell + RATE_PER_SECOND]!;
    let burst = numbers[cell + BURST]!;
    const downsample = state.downsample;
    const behaviour: OverLimitBehaviour = downsample ? 'STABLE_DOWNSAMPLE' : slot.overLimit;
    const capacity = requestCapacity(slot.kind, downsample, rate, burst);
    // Never fits: no wait admits it. Metering alone the meters below refuse it themselves (and still refill, so
    // Remaining and Retry-After are theirs); shared, it is refused before the shared counter.
    const overCapacity = units > capacity;
    // The period quota (quotaMeter.ts), checked before the rate so a request it refuses spends no tokens; a
    // known tenant's readings charge only (a message charge is followed by its readings).
    let quotaMeter: QuotaMeter | null = null;
    let quotaOutcome = QUOTA_ADMITTED;
    if (limits.hasQuota && !byMessage && known && !state.isOverflow && !overCapacity) {
      const quota = limits.quota[slot.dimensionIndex]!;
      if (quota !== null) {
        quotaMeter = state.quotaMeter(slot.dimensionIndex, quota, this.quotaSharing);
        quotaOutcome = quotaMeter.take(units, at);
      }
    }
    const quotaRefused = quotaOutcome !== QUOTA_ADMITTED;

    const shared = this.shared;
    // Until its ceilings arrive a tenant is metered here alone, at the platform default: the other replicas
    // charge the shared counter under the tenant's own limit, and a window counted (and reserved) against a
    // larger limit would look spent to a replica measuring it against the default, refusing the tenant's
    // traffic for the rest of the window. The first answer, usually within a round trip, joins it to them.
    const sharesCounter = shared !== null && state.status !== STATUS_PENDING;
    const sharedActive = sharesCounter && shared.available;
    if (sharesCounter && !sharedActive) {
      // A probe asks for what this request needs, never more than one request can get.
      shared.probeIfDue(nowMs, allowance, byMessage, units < capacity ? units : capacity, at, rate, burst);
      rate = fallbackRate(slot.kind, rate);
      burst = fallbackBurst(burst);
    }

    let admitted: boolean;
    let remaining: number;
    let retryAfterSeconds = 0;
    if (quotaRefused) {
      admitted = false;
      remaining = 0;
      retryAfterSeconds = quotaOutcome === QUOTA_SPENT ? quotaMeter!.secondsToReset(at) : 1;
    } else if (sharedActive) {
      const counter = shared.counterOf(allowance, byMessage);
      if (overCapacity) {
        // Never fits, as metering alone: refused here and never charged to the shared budget, where its debt
        // would starve the tenant on every replica (issue 34: 999,999,999 units on a burst of 10).
        admitted = false;
      } else if (downsample) {
        // STABLE_DOWNSAMPLE across replicas: callers hashed out never reach the shared budget; kept ones are
        // charged there, so the shared limit holds, and cuts there tighten the next window's keep fraction.
        const fraction = stableCallerFraction(callerKey ?? tenant);
        const kept = windowKeeps(numbers, cell, units, Math.floor(at / 1000), rate, fraction);
        admitted = kept && counter.take(units, at, rate, burst);
        if (kept) windowSharedOutcome(numbers, cell, units, admitted);
      } else {
        admitted = counter.take(units, at, rate, burst);
      }
      remaining = counter.remaining;
      // Seconds until the shared budget refills what the request needs, at most one capacity (a never-fits
      // request gets the time to a full bucket, as metering alone: a bounded, meaningful Retry-After).
      if (!admitted) retryAfterSeconds = Math.max(1, Math.ceil((units < capacity ? units : capacity) / rate));
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
      const second = Math.floor(at / 1000);
      admitted = downsample
        ? windowTakeDownsampled(numbers, cell, units, second, rate, stableCallerFraction(callerKey ?? tenant))
        : windowTakeExact(numbers, cell, units, second, rate);
      remaining = windowRemaining(numbers, cell, rate);
      if (!admitted) retryAfterSeconds = windowRetryAfterSeconds(numbers, cell, at);
    }
    if (quotaMeter !== null && !quotaRefused) {
      if (admitted) quotaMeter.admitted();
      else quotaMeter.giveBack(units);
      if (admitted && this.holding) this.heldQuota = quotaMeter;
    }
    if (admitted && sharesCounter && !sharedActive) {
      shared.fallbackAdmissions++;
      // Owed to the shared counter once it answers again (a fixed window's: SharedAllowance.admittedAlone).
      shared.counterOf(allowance, byMessage).admittedAlone(units, at);
    }
    const neverFits = !admitted && overCapacity;
    if (this.counting) {
      const refused = admitted ? 0 : quotaRefused ? OUTCOME_QUOTA : neverFits ? REJECTED : refusedCode(behaviour);
      const cause = known || state.isOverflow ? -1 : state.status;
      // A held charge (chargeUntilSettled) is tallied when the caller settles it; a refusal is final at once.
      if (refused === 0 && this.holding) {
        this.heldAllowance = allowance;
        this.heldCause = cause;
      }
      else {
        this.takeDecisionNumbers(at, units);
        this.tallies.count(allowance, byMessage, refused, cause);
      }
      // The shadow limit: decided on its own limiter, whatever the enforced limit decided (so it sees the
      // demand a replay of the ledger sees), never refusing; what it would have refused is counted beside the
      // decision (a message charge as a message, a readings charge as its units and one message). In the
      // enforced path's order: a message the shadow would refuse is a request refused there, so its readings
      // charge (the same allowance and arrival time, after the enforced limit admitted the message) is neither
      // charged to the shadow nor counted again.
      if (allowance.shadowed) this.decideShadow(allowance, byMessage, admitted, units, at, sharesCounter, sharedActive);
    }
    this.vouch(state, known && !allowance.shadowed && !limits.hasQuota);
    this.decidedFastAdmission = false;
    const out = this.decided;
    out.admitted = admitted;
    out.behaviour = admitted ? 'ADMIT' : quotaRefused ? 'REJECT' : behaviour;
    out.limit = quotaRefused ? quotaMeter!.quota!.limit : rate;
    out.remaining = remaining;
    out.retryAfterSeconds = retryAfterSeconds;
    out.burst = capacity;
    out.neverFits = neverFits;
    out.scope = state.isOverflow ? 'overflow' : 'tenant';
    out.source = state.source;
    out.quotaExceeded = quotaRefused;
    out.quotaPeriod = quotaRefused ? quotaMeter!.quota!.period : null;
  }

  /**
   * The decision just made, as an object of the caller's. The one place a decision is allocated: inlined into
   * admit, a caller that only reads the decision lets V8 drop the allocation.
   */
  private copyOfDecided(): AdmitDecision {
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
      quotaExceeded: out.quotaExceeded,
      quotaPeriod: out.quotaPeriod,
    };
  }

  /** The fields of `decided` that every fast-path admission shares. */
  private decideFastAdmission(): void {
    const out = this.decided;
    out.admitted = true;
    out.behaviour = 'ADMIT';
    out.retryAfterSeconds = 0;
    out.neverFits = false;
    out.scope = 'tenant';
    out.quotaExceeded = false;
    out.quotaPeriod = null;
    this.decidedFastAdmission = true;
  }

  /**
   * The fast path's refusal, tallied and decided (its numbers read from requestNumbers and the cell). A vouched
   * state's tenant is known (cause -1) and its slot is the one used last. Like the fast path, it passes no
   * number that may not be a small integer to a call V8 may leave out of line: the tally reads the request's
   * numbers from Tallies.decision, and tokensRetryAfterSeconds (tokenBucket.ts, secondsUntil) is written out
   * here, as the bucket's fractional tokens would be boxed on their way in, an allocation every refusal (12
   * young-generation collections in 3,000,000 refusals when V8's inlining budget ran out before secondsUntil).
   */
  private refuseFast(state: TenantMeter): void {
    const units = this.requestNumbers[REQUEST_UNITS]!;
    const numbers = this.numbers.values;
    const rate = numbers[state.cell + RATE_PER_SECOND]!;
    const burst = numbers[state.cell + BURST]!;
    const behaviour = SLOTS[this.lastSlotIndex]!.overLimit;
    const neverFits = units > burst;
    if (this.counting) {
      this.tallyRequestNumbers();
      this.tallies.count(state.lastAllowance!, false, neverFits ? REJECTED : refusedCode(behaviour), -1);
    }
    this.decidedFastAdmission = false;
    const out = this.decided;
    out.admitted = false;
    out.behaviour = behaviour;
    out.limit = rate;
    out.remaining = remainingTokens(numbers, state.cell);
    const retryAfterSeconds = Math.ceil(((units < burst ? units : burst) - numbers[state.cell + TOKENS]!) / rate);
    out.retryAfterSeconds = retryAfterSeconds > 1 ? retryAfterSeconds : 1;
    out.burst = burst;
    out.neverFits = neverFits;
    out.scope = 'tenant';
    out.source = state.source;
    out.quotaExceeded = false;
    out.quotaPeriod = null;
  }

  /** The fast path's admission that its cell cannot tally: a held charge (tallied when settled), or another second's. */
  private tallyFastAdmission(state: TenantMeter): void {
    if (this.holding) {
      this.heldAllowance = state.lastAllowance;
      this.heldCause = -1;
    } else {
      this.tallyRequestNumbers();
      this.tallies.count(state.lastAllowance!, false, 0, -1);
    }
  }

  /** The request's numbers (requestNumbers) as the decision the next Tallies.count counts; allocates nothing. */
  private tallyRequestNumbers(): void {
    const decision = this.tallies.decision;
    decision[DECISION_AT] = this.requestNumbers[REQUEST_AT]!;
    decision[DECISION_UNITS] = this.requestNumbers[REQUEST_UNITS]!;
  }

  /**
   * `at` and `units` as the decision the next Tallies.count counts. For callers that hold them as numbers already
   * (the full path, a shadow limit's count, a settled hold), where V8 inlines this small method.
   */
  private takeDecisionNumbers(at: number, units: number): void {
    const decision = this.tallies.decision;
    decision[DECISION_AT] = at;
    decision[DECISION_UNITS] = units;
  }

  /** The shadow limit's decision on one charge, counted beside the enforced one (see decideInto). Allocates nothing. */
  private decideShadow(allowance: AllowanceState, byMessage: boolean, admitted: boolean, units: number, at: number, sharesCounter: boolean, sharedActive: boolean): void {
    if (!byMessage && allowance.shadowRefusedMessages > 0 && at === allowance.shadowRefusedMessageAt) {
      allowance.shadowRefusedMessages--;
      return;
    }
    if (this.shadowAdmits(allowance, byMessage, units, at, sharesCounter, sharedActive)) return;
    this.takeDecisionNumbers(at, units);
    this.tallies.count(allowance, byMessage, OUTCOME_SHADOW_LIMITED, -1);
    // A message the enforced limit refused gets no readings charge: nothing to skip.
    if (byMessage && admitted) {
      if (at === allowance.shadowRefusedMessageAt) allowance.shadowRefusedMessages++;
      else {
        allowance.shadowRefusedMessageAt = at;
        allowance.shadowRefusedMessages = 1;
      }
    }
  }

  /**
   * Whether the shadow limit would admit this charge. With a shared budget it is counted across replicas as the
   * enforced limit is (sharedCounting.ts): from its own shared counter while the budget is reachable (a count
   * over its capacity refused first, never charged there), at half the shadow limit here alone while it is not
   * (the enforced counter's probe finds the budget back for both), and alone at its limit while the tenant's
   * ceilings are pending. Without one, each replica decides it alone (AllowanceState.shadowAdmits).
   */
  private shadowAdmits(allowance: AllowanceState, byMessage: boolean, units: number, at: number, sharesCounter: boolean, sharedActive: boolean): boolean {
    if (!sharedActive) return allowance.shadowAdmits(byMessage, units, at, sharesCounter);
    const values = this.numbers.values;
    const rate = values[allowance.cell + SHADOW_RATE_PER_SECOND]!;
    const burst = values[allowance.cell + SHADOW_BURST]!;
    if (units > requestCapacity(allowance.slot.kind, false, rate, burst)) return false;
    return this.shared!.shadowCounterOf(allowance, byMessage).take(units, at, rate, burst);
  }

  /**
   * A readings charge whose fate the caller learns only later: the HTTP ingest door charges readings before
   * it checks the credential and hands them to the sink (docs/governance-model.md, the order of a door's checks). Decided as admit decides; a
   * refusal is tallied at once, an admission only when the caller settles it (HeldCharge.settle): admitted,
   * unauthenticated (a 401 after the charge: counted apart, never as admitted), or withdrawn (the service
   * failed to take them, a 503, or another limit refused the request: not counted). The tokens stay spent
   * either way, so a flood of unauthenticated or retried requests is still bounded by the allowance.
   * Allocates the held charge and a copy of its decision; hold is the same without either.
   */
  chargeUntilSettled(request: AdmitRequest): DecidedCharge<AdmitDecision> {
    this.decideHeld(request);
    const charge = new DecidedCharge(this.copyOfDecided());
    charge.hold(this.takeHeldAllowance(), this.heldCause, request.at, request.units, this.tallyHeld);
    charge.holdQuota(this.takeHeldQuota());
    return charge;
  }

  /**
   * chargeUntilSettled into the caller's `charge` (a new one, or one settled before), with the decision as
   * decide gives it: the Governor's own record, overwritten by its next call. Allocates nothing.
   */
  hold(request: AdmitRequest, charge: HeldCharge): Readonly<AdmitDecision> {
    this.decideHeld(request);
    charge.hold(this.takeHeldAllowance(), this.heldCause, request.at, request.units, this.tallyHeld);
    charge.holdQuota(this.takeHeldQuota());
    return this.decided;
  }

  /** Decides a held charge into `decided`; an admission's allowance and cause wait in `heldAllowance` and `heldCause`. */
  private decideHeld(request: AdmitRequest): void {
    if (request.charge === 'message') throw new InvalidAdmission('only a readings charge is held until settled');
    this.holding = true;
    this.heldAllowance = null;
    this.heldQuota = null;
    this.takeRequestNumbers(request);
    try {
      this.decideInto(request.tenant, request.dimension, request.allowance, request.charge, request.callerKey, request.untrustedName);
    } finally {
      this.holding = false;
    }
  }

  private takeHeldAllowance(): AllowanceState | null {
    const allowance = this.heldAllowance;
    this.heldAllowance = null;
    return allowance;
  }

  private takeHeldQuota(): QuotaMeter | null {
    const quota = this.heldQuota;
    this.heldQuota = null;
    return quota;
  }

  /**
   * Whether plan() can note anything now: there is a shared budget and it is reachable. A batch caller that
   * reads its items to plan them may skip that pass when this is false (plan would return at once for each).
   */
  get plansShared(): boolean {
    const shared = this.shared;
    return shared !== null && shared.available;
  }

  /**
   * For a caller that decides a batch and can wait first (the admission API): notes what this request will ask
   * of its shared counter, so that `reservePlanned` can reserve the batch's demand before it is decided. Does
   * nothing without a reachable shared budget, for a name whose ceilings this Governor does not know yet (its
   * first admissions are metered here alone, see decideInto; a tenant loaded at start or announced since is
   * known, and planned on its first batch), under STABLE_DOWNSAMPLE (callers hashed
   * out never reach the shared budget), for a request that is invalid or never fits. Decides and counts nothing.
   */
  plan(request: AdmitRequest): void {
    const shared = this.shared;
    if (shared === null || !shared.available) return;
    const units = request.units;
    if (!(units > 0 && units < Infinity) || !(request.at > -Infinity && request.at < Infinity)) return;
    const slotIndex = slotIndexOf(request.dimension, request.allowance);
    if (slotIndex < 0) return;
    const slot = SLOTS[slotIndex]!;
    const byMessage = request.charge === 'message';
    if (byMessage && !slot.messageCharged) return;
    // The state admit will meter this request on: a name with a state keeps it whatever door it comes through
    // (admit marks it trusted on a trusted allowance, it does not replace it). So a tenant loaded at start, or
    // announced since, is planned on its first batch too: requiring it to have been seen on a trusted allowance
    // first left its first batch to the credit of one minimum slice (1 of 20 at 5/s burst 10).
    const state = this.states.get(request.tenant);
    if (state === undefined || state.status !== STATUS_KNOWN || state.isOverflow) return;
    const allowance = state.allowance(slotIndex, this.limitsOf(state));
    if (state.downsample) return;
    const numbers = this.numbers.values;
    const rate = numbers[state.cell + RATE_PER_SECOND]!;
    const burst = numbers[state.cell + BURST]!;
    const capacity = requestCapacity(slot.kind, false, rate, burst);
    if (units > capacity) return;
    const counter = shared.counterOf(allowance, byMessage);
    if (counter.plan(units, capacity, request.at, rate, burst)) this.planned.push(counter);
    if (allowance.shadowed) {
      // The shadow limit's counter is planned too, so it decides the batch as the enforced one does.
      const shadowRate = numbers[allowance.cell + SHADOW_RATE_PER_SECOND]!;
      const shadowBurst = numbers[allowance.cell + SHADOW_BURST]!;
      const shadowCapacity = requestCapacity(slot.kind, false, shadowRate, shadowBurst);
      const shadowCounter = shared.shadowCounterOf(allowance, byMessage);
      if (units <= shadowCapacity && shadowCounter.plan(units, shadowCapacity, request.at, shadowRate, shadowBurst)) this.planned.push(shadowCounter);
    }
  }

  /**
   * Reserves what the planned requests need from the shared budget; resolves when every answer is in (or its
   * reservation failed: the batch is then decided on what is held, or at half the limit). Null when nothing
   * needs waiting for. Decide the batch right after, without awaiting anything else in between.
   */
  reservePlanned(): Promise<void> | null {
    const planned = this.planned;
    if (planned.length === 0) return null;
    let waits: Promise<void>[] | null = null;
    for (const counter of planned) {
      const waiting = counter.reservePlanned();
      if (waiting !== null) (waits ??= []).push(waiting);
    }
    planned.length = 0;
    return waits === null ? null : Promise.all(waits).then(() => undefined);
  }

  /** The limits a state meters at: the platform's until its own are known. */
  private limitsOf(state: TenantMeter) {
    if (state.status !== STATUS_KNOWN) return this.cache.platformLimits;
    return state.limitsVersion === this.cache.platformVersion && state.limits !== null ? state.limits : this.cache.limitsOf(state);
  }

  /** Whether this state's next admits on the same slot may take the fast path (see TenantMeter.fastKey). */
  private vouch(state: TenantMeter, known: boolean): void {
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

  /**
   * Ceilings read ahead, in bulk: every registered tenant's record and the platform defaults, read at start
   * before the service is ready, so a tenant's own limit holds from its first request (no platform-default
   * metering while a read is under way). Each tenant is confirmed and known at once, fresh for the cache TTL.
   */
  learnLimits(records: Iterable<TenantGovernanceRecord>, platformDefaults: Partial<Record<Dimension, unknown>>): number {
    this.cache.learnPlatformDefaults(platformDefaults);
    let learned = 0;
    for (const record of records) {
      this.cache.learn(this.names.confirm(record.tenantId), record);
      learned++;
    }
    return learned;
  }

  /**
   * A committed change to ceilings (src/control-plane/limitChanges.ts announces them): the tenants it concerns
   * are read again now, in the background, whatever their TTL; admits meanwhile use the values they had. A
   * tenant change of a name never seen makes it a confirmed tenant (only a registered tenant's records change),
   * read at once, so its first request meets its own limits.
   */
  reloadLimits(change: LimitReload): void {
    switch (change.kind) {
      case 'tenant':
        this.cache.reload(this.names.confirm(change.tenantId));
        return;
      case 'tier':
        for (const state of this.states.values()) if (state.ceilings?.tierId === change.tierId) this.cache.reload(state);
        return;
      case 'platform':
        this.cache.reloadPlatformDefaults();
        return;
      case 'all':
        this.cache.reloadPlatformDefaults();
        for (const state of this.states.values()) if (state.status !== STATUS_PENDING || state.confirmed) this.cache.reload(state);
        return;
    }
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
      recordFailures: this.tallies.failures,
      sharedFallbackActive: this.shared !== null && !this.shared.available,
      sharedFallbackAdmissions: this.shared?.fallbackAdmissions ?? 0,
      sharedFailures: this.shared?.failures ?? 0,
      clampedTallies: this.tallies.clamped,
    };
  }

  /** Resolves when no LimitSource read is queued or running. */
  loadsSettled(): Promise<void> {
    return this.cache.settled();
  }

  /**
   * A tenant's ceilings became known (at start, on its first request, on a change): with a shared quota count,
   * each of its quotas asks for a first slice now, so its first request is not refused to wait for one
   * (quotaMeter.ts admits nothing on credit). At most QUOTA_WARM_UPS_IN_FLIGHT reservations are under way for
   * this; the rest wait their turn, so thousands of tenants learned at start do not crowd the budget's pool.
   */
  private warmQuotas(state: TenantMeter): void {
    if (!this.quotaSharing.shared || state.ceilings === null || !setsAnyQuota(state.ceilings, this.cache.platformDefaults)) return;
    this.quotaWarmUps.push(state);
    this.pumpQuotaWarmUps();
  }

  private pumpQuotaWarmUps(): void {
    const queue = this.quotaWarmUps;
    const sharing = this.quotaSharing;
    if (this.quotaWarmUpsHead === queue.length) return;
    const at = this.now();
    while (this.quotaWarmUpsHead < queue.length && sharing.pending < QUOTA_WARM_UPS_IN_FLIGHT) {
      const state = queue[this.quotaWarmUpsHead++]!;
      if (state.status !== STATUS_KNOWN) continue;
      const quotas = this.limitsOf(state).quota;
      for (let index = 0; index < quotas.length; index++) {
        const quota = quotas[index];
        if (quota !== null && quota !== undefined) state.quotaMeter(index, quota, sharing).warmUp(at);
      }
    }
    if (this.quotaWarmUpsHead === queue.length) {
      queue.length = 0;
      this.quotaWarmUpsHead = 0;
    }
  }

  /** Resolves when no shared-budget reservation (rate or quota) is on its way to or from Redis. */
  async reservationsSettled(): Promise<void> {
    await Promise.all([this.shared?.settled(), this.quotaSharing.settled()]);
  }

  /** Hands every tally, the current second included, to the Recorder and waits for it. */
  flush(): Promise<void> {
    return this.tallies.flush();
  }

  /** Stops the timer and flushes; rejects if the Recorder could not take the last batch. */
  close(): Promise<void> {
    // Quotas not warmed yet stay cold: nothing more is reserved for a Governor that is done.
    this.quotaWarmUps.length = 0;
    this.quotaWarmUpsHead = 0;
    return this.tallies.close();
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
}
