// The Governor's meter of one tenant (its per-tenant counting state; the control plane's record of a tenant is
// another thing): what is known of the tenant's ceilings, and one AllowanceState per slot in use. Created once
// per tenant (or allowance) and then updated in place.
import { DISCARD_CELL, LAST_SEEN_MS, REFRESH_DUE_MS } from './allowanceNumbers.ts';
import type { AllowanceNumbers } from './allowanceNumbers.ts';
import { AllowanceState } from './allowanceState.ts';
import { QuotaMeter, type QuotaSharing } from './quotaMeter.ts';
import type { Ceilings, ResolvedLimits } from './resolvedLimits.ts';
import { SLOT_COUNT, SLOTS } from './slots.ts';
import { DIMENSIONS } from './types.ts';
import type { LimitSourceLevel, QuotaValue } from './types.ts';

// Status values double as the unresolved cause index (CAUSE_NAMES of allowanceState.ts) while the ceilings
// are not known.
export const STATUS_PENDING = 0;
export const STATUS_UNREACHABLE = 1;
export const STATUS_UNKNOWN_TENANT = 2;
export const STATUS_KNOWN = 3;

export class TenantMeter {
  /**
   * The Governor's fast-path key (epoch and slot) this state was last checked eligible under, or -1. Equal to
   * the Governor's current key, it vouches that the allowance used last is this slot's, with current limits,
   * a known and confirmed tenant, and no refresh due as of the epoch: admit may go straight to the cell.
   */
  fastKey = -1;
  /** The last allowance's cell in AllowanceNumbers. */
  cell = 0;
  source: LimitSourceLevel = 'SHIPPED_DEFAULT';
  // What a decision reads of the allowance used last (a tenant's traffic mostly hits one allowance in a row) is
  // copied here (cell, source, downsample), so the common admit goes from this object straight to the numbers.
  lastAllowance: AllowanceState | null = null;
  confirmed = false;
  /** Seen on an allowance whose sender is authenticated or operator-trusted (anything but HTTP). */
  trusted = false;
  status = STATUS_PENDING;
  /** What its limits are resolved from, shared with the tenants whose records say the same (LimitCache). */
  ceilings: Ceilings | null = null;
  limits: ResolvedLimits | null = null;
  /** Platform-defaults version `limits` was resolved against. */
  limitsVersion = -1;
  loading = false;
  /** A change was announced while a read was under way (which may predate it): read once more after it. */
  reloadAgain = false;
  /** Offset of this tenant's cell in AllowanceNumbers: refreshDueMs and lastSeenMs, unboxed. */
  private timesCell: number;
  private lastSlotIndex = -1;
  private lastLimits: ResolvedLimits | null = null;
  downsample = false;
  readonly slots: (AllowanceState | undefined)[] = new Array<AllowanceState | undefined>(SLOT_COUNT).fill(undefined);
  /** Period quota meters by dimension index, made when a quota first applies. */
  private quotas: (QuotaMeter | undefined)[] | null = null;

  constructor(
    readonly name: string,
    private readonly numbers: AllowanceNumbers,
    readonly isOverflow = false,
  ) {
    this.timesCell = numbers.take();
    this.lastSeenMs = 0;
    // The overflow allowance is metered at the platform default and never asks the LimitSource.
    this.refreshDueMs = isOverflow ? Number.POSITIVE_INFINITY : 0;
  }

  get refreshDueMs(): number {
    return this.numbers.values[this.timesCell + REFRESH_DUE_MS]!;
  }

  set refreshDueMs(ms: number) {
    this.numbers.values[this.timesCell + REFRESH_DUE_MS] = ms;
  }

  get lastSeenMs(): number {
    return this.numbers.values[this.timesCell + LAST_SEEN_MS]!;
  }

  set lastSeenMs(ms: number) {
    this.numbers.values[this.timesCell + LAST_SEEN_MS] = ms;
  }

  /** The allowance of `slotIndex`, metering at `limits`; `cell`, `source` and `downsample` then describe it. */
  allowance(slotIndex: number, limits: ResolvedLimits): AllowanceState {
    if (this.lastSlotIndex === slotIndex && this.lastLimits === limits) return this.lastAllowance!;
    const allowance =
      this.slots[slotIndex] ?? (this.slots[slotIndex] = new AllowanceState(this.name, SLOTS[slotIndex]!, this.numbers));
    if (allowance.limits !== limits) allowance.useLimits(limits);
    this.lastAllowance = allowance;
    this.lastSlotIndex = slotIndex;
    this.lastLimits = limits;
    this.cell = allowance.cell;
    this.source = allowance.source;
    this.downsample = allowance.downsample;
    return allowance;
  }

  /** The meter of the dimension's period quota, counting at `quota`. */
  quotaMeter(dimensionIndex: number, quota: QuotaValue, sharing: QuotaSharing): QuotaMeter {
    const quotas = (this.quotas ??= new Array<QuotaMeter | undefined>(DIMENSIONS.length).fill(undefined));
    const meter = quotas[dimensionIndex] ?? (quotas[dimensionIndex] = new QuotaMeter(this.name, DIMENSIONS[dimensionIndex]!, sharing));
    if (meter.quota !== quota) meter.use(quota);
    return meter;
  }

  /**
   * Evicted: the cells go back to the store (the allowances' counts may still wait for a flush). A load still
   * in flight for this state may set its times afterwards: they go to the discard cell.
   */
  release(): void {
    this.numbers.release(this.timesCell);
    this.timesCell = DISCARD_CELL;
    for (const allowance of this.slots) allowance?.release();
  }
}
