// One allowance of one tenant: the limits it meters at, its message bucket, fixed window and shared counters,
// and its counts: the current second's in its own fields, earlier seconds not yet recorded in a Tally. The
// current second's admitted readings charges with known ceilings, the common case by far, may also be counted
// in its cell by admit's fast path (Governor.decideInto, while the cell's TALLY_SECOND is `at`'s second: the
// same Math.floor(at / 1000) as Tallies.count's): a compare and two adds on numbers the decision just read,
// folded into the fields below before anything reads or closes them. Its
// readings bucket, rate and burst live in one cell of AllowanceNumbers; TenantMeter copies what a decision
// reads for the allowance last used, so a token-bucket admit need not touch this object at all (with
// thousands of tenants an admit costs mostly cache misses).
import { BURST, RATE_PER_SECOND, SHADOW, SHADOW_BURST, SHADOW_RATE_PER_SECOND, TALLY_SECOND, TALLY_MESSAGES, TALLY_UNITS } from './allowanceNumbers.ts';
import type { AllowanceNumbers } from './allowanceNumbers.ts';
import { FixedWindow, startWindow } from './fixedWindow.ts';
import type { ResolvedLimits } from './resolvedLimits.ts';
import { fallbackBurst, fallbackRate } from './sharedCounting.ts';
import type { SharedAllowance } from './sharedCounting.ts';
import type { SlotSpec } from './slots.ts';
import { takeTokens, TokenBucket } from './tokenBucket.ts';
import type { LimitSourceLevel } from './types.ts';

// Why admissions were metered at the platform default (TenantMeter's status while its ceilings are unknown).
export const CAUSE_PENDING = 0;
export const CAUSE_UNREACHABLE = 1;
export const CAUSE_UNKNOWN_TENANT = 2;
export const CAUSE_NAMES = ['pending', 'unreachable', 'unknown-tenant'] as const;

// What became of a decision, as count() tallies it.
export const OUTCOME_ADMITTED = 0;
export const OUTCOME_SHED = 1;
export const OUTCOME_REJECTED = 2;
/** Charged, then refused for its credential (ingest's 401): not admitted, not a limit hit. */
export const OUTCOME_UNAUTHENTICATED = 3;
/** Not an outcome of its own: the shadow limit would have refused it (counted beside the decision's outcome). */
export const OUTCOME_SHADOW_LIMITED = 4;
/** Rejected for the period quota: counted as rejected, and apart as quota-rejected. */
export const OUTCOME_QUOTA = 5;

/**
 * A counted decision's numbers, in the Float64Array count() reads them from (Tallies.decision): its time (ms)
 * and units. Passed as arguments, they would be boxed whenever V8 leaves the call out of line (a time is never a
 * small integer), an allocation for every refusal: V8 inlines count into admit's refusal or not as its budget
 * of the moment allows (12 young-generation collections in 3,000,000 refusals when it did not).
 */
export const DECISION_AT = 0;
export const DECISION_UNITS = 1;
export const DECISION_SIZE = 2;

/**
 * Counts of one allowance over a span of whole seconds, waiting for the Recorder: the closed seconds an
 * AllowanceState has folded in since the last flush (several of them when a slow Recorder made windows merge).
 */
export class Tally {
  // NaN until cover() sets them (it reads neither before the first decision): not a small integer, so V8 gives
  // the fields their double representation from the start, as Unix seconds need (a change of representation
  // later deoptimizes every function that read a Tally, admit's too).
  fromSecond = Number.NaN;
  toSecond = Number.NaN;
  decisions = 0;
  admittedUnits = 0;
  admittedMessages = 0;
  shedUnits = 0;
  shedMessages = 0;
  rejectedUnits = 0;
  rejectedMessages = 0;
  unauthenticatedUnits = 0;
  unauthenticatedMessages = 0;
  /** What the shadow limit would have refused (it refuses nothing). */
  shadowLimitedUnits = 0;
  shadowLimitedMessages = 0;
  quotaRejectedUnits = 0;
  quotaRejectedMessages = 0;
  hitSeconds = 0;
  /** Admitted at the platform default while the tenant's ceilings were unknown, by cause. */
  readonly unresolvedUnits = [0, 0, 0];
  readonly unresolvedMessages = [0, 0, 0];

  clear(): void {
    this.decisions = 0;
    this.admittedUnits = 0;
    this.admittedMessages = 0;
    this.shedUnits = 0;
    this.shedMessages = 0;
    this.rejectedUnits = 0;
    this.rejectedMessages = 0;
    this.unauthenticatedUnits = 0;
    this.unauthenticatedMessages = 0;
    this.shadowLimitedUnits = 0;
    this.shadowLimitedMessages = 0;
    this.quotaRejectedUnits = 0;
    this.quotaRejectedMessages = 0;
    this.hitSeconds = 0;
    for (let cause = 0; cause < CAUSE_NAMES.length; cause++) {
      this.unresolvedUnits[cause] = 0;
      this.unresolvedMessages[cause] = 0;
    }
  }

  /** Widens the span to cover `second`. */
  cover(second: number): void {
    if (this.decisions === 0) {
      this.fromSecond = second;
      this.toSecond = second;
    } else if (second < this.fromSecond) this.fromSecond = second;
    else if (second > this.toSecond) this.toSecond = second;
  }
}

/**
 * Tallies whose counts went to a batch (AllowanceState.releaseClosed), made again by closeOpenSecond: an
 * allowance holds one only while closed seconds of it wait for a flush, not for life (one per active
 * allowance, with its numbers and arrays about ten heap objects, was marked again by every full collection:
 * bench/RESULTS.md, the heap snapshot at 50,000). Cleared before they come here; at most MAX_SPARE_TALLIES.
 */
const spareTallies: Tally[] = [];
const MAX_SPARE_TALLIES = 4_096;

export class AllowanceState {
  // Fields a decision reads first (V8 lays them out in declaration order); the recording fields follow, the
  // ones only a flush reads come last.
  /** Offset of this allowance's cell in `numbers.values`: its readings bucket, rate and burst. */
  readonly cell: number;
  /** The resolved limits the numbers below came from; compared by identity on every admit. */
  limits: ResolvedLimits | null = null;
  source: LimitSourceLevel = 'SHIPPED_DEFAULT';
  downsample = false;
  /** A shadow limit watches this allowance (its rate and bucket are in the cell): admits take the full path. */
  shadowed = false;
  /**
   * Per-message charge before decoding (HTTP, MQTT, LwM2M), against the same numbers as the readings. Made on
   * the first message charge (a new bucket starts full then, as it would have anyway), so allowances charged
   * only by readings carry no second bucket between the fields an admit reads.
   */
  messageBucket: TokenBucket | null = null;
  /**
   * The shadow limit's own limiters where the cell has no room for them: its message bucket (per-message
   * charges) and its fixed window (API_REQUESTS). Made on the first shadowed charge of their kind.
   */
  shadowMessageBucket: TokenBucket | null = null;
  shadowWindow: FixedWindow | null = null;
  /**
   * Message charges the enforced limit admitted but the shadow would have refused, at `shadowRefusedMessageAt`
   * (their arrival time, which a door charges the readings with too), whose readings charge has not come yet.
   * Under the shadow's numbers the enforced path would have refused the message, so its readings would never
   * have been charged: each such readings charge skips the shadow (Governor.decideInto). Only the latest
   * arrival time is kept, so a message whose readings never came (undecodable) cannot skip a later request's.
   */
  shadowRefusedMessages = 0;
  shadowRefusedMessageAt = Number.NaN;

  /** Listed among the allowances with counts to flush. */
  dirty = false;
  /** The window of the flush interval its counts lie in (Tallies.count); NaN before the first count. */
  tallyWindow = Number.NaN;
  // The current second's counts.
  /** Meaningful only while openDecisions > 0 (or the cell is armed); NaN at first for its representation (see Tally). */
  openSecond = Number.NaN;
  openDecisions = 0;
  openAdmittedUnits = 0;
  openAdmittedMessages = 0;
  openShedUnits = 0;
  openShedMessages = 0;
  openRejectedUnits = 0;
  openRejectedMessages = 0;
  openUnauthenticatedUnits = 0;
  openUnauthenticatedMessages = 0;
  openShadowLimitedUnits = 0;
  openShadowLimitedMessages = 0;
  openQuotaRejectedUnits = 0;
  openQuotaRejectedMessages = 0;
  openHit = 0;
  /** Unresolved cause of the open second's admissions at the platform default, or -1. */
  openCause = -1;
  openUnresolvedUnits = 0;
  openUnresolvedMessages = 0;
  /** Earlier seconds not yet handed to the Recorder; taken when a second closes, given back once handed over (never without a Recorder). */
  closed: Tally | null = null;
  sharedReadings: SharedAllowance | null = null;
  sharedMessages: SharedAllowance | null = null;
  /** The shadow limit's shared counters (with Redis), made on its first shared charge. */
  sharedShadowReadings: SharedAllowance | null = null;
  sharedShadowMessages: SharedAllowance | null = null;
  /** Evicted (release): its cell belongs to another allowance now, and holds none of its counts. */
  private released = false;

  /**
   * Its key in a batch of summaries (tenant and slot), by which AdmissionBatch finds the entries of its earlier
   * windows: made once, when first needed (a slow Recorder, BACKLOG send times), not for every allowance.
   */
  get tallyKey(): string {
    return (this.key ??= `${this.tenantId}\u0000${this.slot.index}`);
  }
  private key: string | null = null;
  /** The batch (AdmissionBatch's serial) that holds its entry of its latest window, and that entry's place there. */
  batchSerial = 0;
  batchEntry = 0;

  constructor(
    readonly tenantId: string,
    readonly slot: SlotSpec,
    private readonly numbers: AllowanceNumbers,
  ) {
    this.cell = numbers.take();
    // A fixed window's numbers live in the cell (fixedWindow.ts).
    if (slot.kind === 'FIXED_WINDOW') startWindow(numbers.values, this.cell);
  }

  /**
   * Evicted: the cell may be given to another allowance; this one meters nothing any more. Its counts in the
   * cell are folded into its fields first (they may still wait for a flush), and nothing is counted in the
   * cell after (a held charge settled later counts in the fields).
   */
  release(): void {
    this.foldCellTally();
    this.released = true;
    this.numbers.release(this.cell);
  }

  /**
   * Lets admit's fast path count the admissions of `second` in the cell before any count() opens it (Tallies
   * collect: the second after the one it just closed, where an active allowance's traffic goes on). The open
   * second is `second`, with no decisions yet; the allowance stays listed as dirty, so collect folds what the
   * cell counted, or disarms the cell when nothing came. False when evicted.
   */
  armCell(second: number): boolean {
    if (this.released) return false;
    this.openSecond = second;
    this.numbers.values[this.cell + TALLY_SECOND] = second;
    return true;
  }

  /** Nothing more may be counted in the cell (its allowance is no longer listed as dirty). */
  disarmCell(): void {
    if (!this.released) this.numbers.values[this.cell + TALLY_SECOND] = Number.NaN;
  }

  /**
   * Collect's common case: the second armed in the cell when the cell holds every count of the allowance (none
   * in the open second's fields, no closed seconds), which collect then hands over from the cell alone
   * (takeCellTally) without touching the fields; NaN otherwise (or when the cell is not armed).
   */
  onlyCellSecond(): number {
    if (this.released || this.openDecisions > 0 || (this.closed !== null && this.closed.decisions > 0)) return Number.NaN;
    return this.numbers.values[this.cell + TALLY_SECOND]!;
  }

  /**
   * The cell's admissions (onlyCellSecond: they are all of the allowance's counts) as a closed tally of its
   * armed second, written into `into` (a cleared Tally of collect's own) and cleared from the cell. False when
   * the cell counted nothing.
   */
  takeCellTally(into: Tally, second: number): boolean {
    const values = this.numbers.values;
    const messages = values[this.cell + TALLY_MESSAGES]!;
    if (messages === 0) return false;
    into.fromSecond = second;
    into.toSecond = second;
    into.decisions = messages;
    into.admittedMessages = messages;
    into.admittedUnits = values[this.cell + TALLY_UNITS]!;
    values[this.cell + TALLY_MESSAGES] = 0;
    values[this.cell + TALLY_UNITS] = 0;
    return true;
  }

  /** Whether the cell holds counts not folded yet. */
  cellCounted(): boolean {
    return !this.released && this.numbers.values[this.cell + TALLY_MESSAGES]! > 0;
  }

  /** Moves the cell's counts into the open second's fields (the cell's second is always the open one). */
  foldCellTally(): void {
    if (this.released) return;
    const values = this.numbers.values;
    const messages = values[this.cell + TALLY_MESSAGES]!;
    if (messages === 0) return;
    this.openDecisions += messages;
    this.openAdmittedMessages += messages;
    this.openAdmittedUnits += values[this.cell + TALLY_UNITS]!;
    values[this.cell + TALLY_MESSAGES] = 0;
    values[this.cell + TALLY_UNITS] = 0;
  }

  useLimits(limits: ResolvedLimits): void {
    const dimensionIndex = this.slot.dimensionIndex;
    const values = this.numbers.values;
    this.limits = limits;
    values[this.cell + RATE_PER_SECOND] = limits.ratePerSecond[dimensionIndex]!;
    values[this.cell + BURST] = limits.burst[dimensionIndex]!;
    this.source = limits.source[dimensionIndex]!;
    this.downsample = this.slot.kind === 'FIXED_WINDOW' && limits.apiOverLimitPolicy === 'STABLE_DOWNSAMPLE';
    // Token buckets and fixed windows alike (a fixed window's rate is its limit per window); 0 where no shadow.
    const shadowRate = limits.shadowRatePerSecond[dimensionIndex]!;
    values[this.cell + SHADOW_RATE_PER_SECOND] = shadowRate;
    values[this.cell + SHADOW_BURST] = limits.shadowBurst[dimensionIndex]!;
    this.shadowed = shadowRate > 0;
  }

  /**
   * Whether the shadow limit (a limit set with mode SHADOW, `shadowed`) would admit this charge, decided on its
   * own limiter with the shadow's numbers: the readings bucket in the cell, its message bucket, or its fixed
   * window (API_REQUESTS: as EXACT_REJECT decides, whatever the tenant's over-limit policy, as a preview
   * replays it). Allocates only the first message bucket or window. `halved`: the shared budget is configured
   * but unreachable, so the shadow is metered here at half its limit, as the enforced one is (sharedCounting.ts);
   * while it is reachable the Governor decides the shadow from its shared counter instead.
   */
  shadowAdmits(byMessage: boolean, units: number, at: number, halved: boolean): boolean {
    const values = this.numbers.values;
    let rate = values[this.cell + SHADOW_RATE_PER_SECOND]!;
    if (halved) rate = fallbackRate(this.slot.kind, rate);
    if (this.slot.kind === 'FIXED_WINDOW') return (this.shadowWindow ??= new FixedWindow()).takeExact(units, Math.floor(at / 1000), rate);
    let burst = values[this.cell + SHADOW_BURST]!;
    if (halved) burst = fallbackBurst(burst);
    if (byMessage) return (this.shadowMessageBucket ??= new TokenBucket()).take(units, at, rate, burst);
    return takeTokens(values, this.cell + SHADOW, units, at, rate, burst);
  }

  /**
   * Counts one decision: its time and units in `decision` (DECISION_AT, DECISION_UNITS), counted in its second;
   * a message charge (`byMessage`) as that many messages and no readings, a readings charge as its units and one
   * message. `refused` is an OUTCOME_ code (0 admitted, 1 shed, 2 rejected, 3 unauthenticated, 4 what the shadow
   * limit would have refused, counted apart from the decision's own, 5 rejected for the quota); `cause` is the
   * unresolved cause (-1 when the tenant's ceilings are known). Returns whether the allowance just became dirty.
   */
  count(decision: Float64Array, byMessage: boolean, refused: number, cause: number): boolean {
    const second = Math.floor(decision[DECISION_AT]! / 1000);
    const units = byMessage ? 0 : decision[DECISION_UNITS]!;
    const messages = byMessage ? decision[DECISION_UNITS]! : 1;
    this.foldCellTally();
    if (this.openDecisions > 0 && (this.openSecond !== second || (cause >= 0 && this.openCause >= 0 && cause !== this.openCause))) {
      this.closeOpenSecond();
    }
    if (this.openDecisions === 0) this.openSecond = second;
    this.openDecisions++;
    if (refused === 0) {
      this.openAdmittedUnits += units;
      this.openAdmittedMessages += messages;
      if (cause >= 0) {
        this.openCause = cause;
        this.openUnresolvedUnits += units;
        this.openUnresolvedMessages += messages;
      }
    } else if (refused === OUTCOME_UNAUTHENTICATED) {
      this.openUnauthenticatedUnits += units;
      this.openUnauthenticatedMessages += messages;
    } else if (refused === OUTCOME_SHADOW_LIMITED) {
      this.openShadowLimitedUnits += units;
      this.openShadowLimitedMessages += messages;
    } else {
      this.openHit = 1;
      if (refused === 1) {
        this.openShedUnits += units;
        this.openShedMessages += messages;
      } else {
        this.openRejectedUnits += units;
        this.openRejectedMessages += messages;
        if (refused === OUTCOME_QUOTA) {
          this.openQuotaRejectedUnits += units;
          this.openQuotaRejectedMessages += messages;
        }
      }
    }
    // The open second is `second` now and has a decision: admit's fast path may count this second's admitted
    // readings charges in the cell until it closes (closeOpenSecond folds them in and stops it).
    if (!this.released) this.numbers.values[this.cell + TALLY_SECOND] = second;
    if (this.dirty) return false;
    this.dirty = true;
    return true;
  }

  /** Its closed seconds were handed to a batch: the Tally is cleared and goes back to the spares. */
  releaseClosed(): void {
    const closed = this.closed;
    if (closed === null) return;
    closed.clear();
    this.closed = null;
    if (spareTallies.length < MAX_SPARE_TALLIES) spareTallies.push(closed);
  }

  /** Folds the open second into the closed span. */
  closeOpenSecond(): void {
    this.foldCellTally();
    if (!this.released) this.numbers.values[this.cell + TALLY_SECOND] = Number.NaN;
    if (this.openDecisions === 0) return;
    const closed = (this.closed ??= spareTallies.pop() ?? new Tally());
    closed.cover(this.openSecond);
    closed.decisions += this.openDecisions;
    closed.admittedUnits += this.openAdmittedUnits;
    closed.admittedMessages += this.openAdmittedMessages;
    closed.shedUnits += this.openShedUnits;
    closed.shedMessages += this.openShedMessages;
    closed.rejectedUnits += this.openRejectedUnits;
    closed.rejectedMessages += this.openRejectedMessages;
    closed.unauthenticatedUnits += this.openUnauthenticatedUnits;
    closed.unauthenticatedMessages += this.openUnauthenticatedMessages;
    closed.shadowLimitedUnits += this.openShadowLimitedUnits;
    closed.shadowLimitedMessages += this.openShadowLimitedMessages;
    closed.quotaRejectedUnits += this.openQuotaRejectedUnits;
    closed.quotaRejectedMessages += this.openQuotaRejectedMessages;
    closed.hitSeconds += this.openHit;
    if (this.openCause >= 0) {
      closed.unresolvedUnits[this.openCause]! += this.openUnresolvedUnits;
      closed.unresolvedMessages[this.openCause]! += this.openUnresolvedMessages;
    }
    this.openDecisions = 0;
    this.openAdmittedUnits = 0;
    this.openAdmittedMessages = 0;
    this.openShedUnits = 0;
    this.openShedMessages = 0;
    this.openRejectedUnits = 0;
    this.openRejectedMessages = 0;
    this.openUnauthenticatedUnits = 0;
    this.openUnauthenticatedMessages = 0;
    this.openShadowLimitedUnits = 0;
    this.openShadowLimitedMessages = 0;
    this.openQuotaRejectedUnits = 0;
    this.openQuotaRejectedMessages = 0;
    this.openHit = 0;
    this.openCause = -1;
    this.openUnresolvedUnits = 0;
    this.openUnresolvedMessages = 0;
  }
}
