// One allowance of one tenant: its readings bucket (it extends TokenBucket), the limits it meters at, and the
// counts of the current second, all as fields of this one object. With thousands of tenants an admit costs
// mostly cache misses, so a decision touches this object and nothing it points to.
import { FixedWindow } from './fixedWindow.ts';
import type { ResolvedLimits } from './resolvedLimits.ts';
import type { SharedAllowance } from './sharedAllowance.ts';
import type { SlotSpec } from './slots.ts';
import { Tally } from './tally.ts';
import { TokenBucket } from './tokenBucket.ts';
import type { LimitSourceLevel } from './types.ts';

export class AllowanceState extends TokenBucket {
  // Fields an admit reads come first (V8 lays them out in declaration order), so a decision touches as few
  // cache lines of this object as it can; the recording fields follow, the ones only a flush reads come last.
  /** slot.index, kept here so the hot path need not touch the shared SlotSpec. */
  readonly slotIndex: number;
  /** The resolved limits the numbers below came from; compared by identity on every admit. */
  limits: ResolvedLimits | null = null;
  ratePerSecond = 0;
  burst = 0;
  source: LimitSourceLevel = 'SHIPPED_DEFAULT';
  downsample = false;
  /**
   * Per-message charge before decoding (HTTP, MQTT, LwM2M), against the same numbers as the readings. Made on
   * the first message charge (a new bucket starts full then, as it would have anyway), so allowances charged
   * only by readings carry no second bucket between the fields an admit reads.
   */
  messageBucket: TokenBucket | null = null;
  readonly window: FixedWindow | null;

  /** Listed among the allowances with counts to flush. */
  dirty = false;
  // The current second's counts.
  openSecond = 0;
  openDecisions = 0;
  openAdmittedUnits = 0;
  openAdmittedMessages = 0;
  openShedUnits = 0;
  openShedMessages = 0;
  openRejectedUnits = 0;
  openRejectedMessages = 0;
  openHit = 0;
  /** Unresolved cause of the open second's admissions at the platform default, or -1. */
  openCause = -1;
  openUnresolvedUnits = 0;
  openUnresolvedMessages = 0;
  /** Earlier seconds not yet handed to the Recorder; made when the first second closes (never without a Recorder). */
  closed: Tally | null = null;
  sharedReadings: SharedAllowance | null = null;
  sharedMessages: SharedAllowance | null = null;

  constructor(
    readonly tenantId: string,
    readonly slot: SlotSpec,
  ) {
    super();
    this.slotIndex = slot.index;
    this.window = slot.kind === 'FIXED_WINDOW' ? new FixedWindow() : null;
  }

  useLimits(limits: ResolvedLimits): void {
    const dimensionIndex = this.slot.dimensionIndex;
    this.limits = limits;
    this.ratePerSecond = limits.ratePerSecond[dimensionIndex]!;
    this.burst = limits.burst[dimensionIndex]!;
    this.source = limits.source[dimensionIndex]!;
    this.downsample = this.slot.kind === 'FIXED_WINDOW' && limits.apiOverLimitPolicy === 'STABLE_DOWNSAMPLE';
  }

  /**
   * Counts one decision in second `second`. `refused` is 0 (admitted), 1 (shed) or 2 (rejected); `cause` is the
   * unresolved cause (-1 when the tenant's ceilings are known). Returns whether the allowance just became dirty.
   */
  count(second: number, units: number, messages: number, refused: number, cause: number): boolean {
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
    } else {
      this.openHit = 1;
      if (refused === 1) {
        this.openShedUnits += units;
        this.openShedMessages += messages;
      } else {
        this.openRejectedUnits += units;
        this.openRejectedMessages += messages;
      }
    }
    if (this.dirty) return false;
    this.dirty = true;
    return true;
  }

  /** Folds the open second into the closed span. */
  closeOpenSecond(): void {
    if (this.openDecisions === 0) return;
    const closed = (this.closed ??= new Tally());
    closed.cover(this.openSecond);
    closed.decisions += this.openDecisions;
    closed.admittedUnits += this.openAdmittedUnits;
    closed.admittedMessages += this.openAdmittedMessages;
    closed.shedUnits += this.openShedUnits;
    closed.shedMessages += this.openShedMessages;
    closed.rejectedUnits += this.openRejectedUnits;
    closed.rejectedMessages += this.openRejectedMessages;
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
    this.openHit = 0;
    this.openCause = -1;
    this.openUnresolvedUnits = 0;
    this.openUnresolvedMessages = 0;
  }
}
