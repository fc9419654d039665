// Per-tenant state the Governor keeps: what is known of the tenant's ceilings, and one AllowanceState per slot
// in use. Created once per tenant (or allowance) and then updated in place.
import { AllowanceState } from './allowanceState.ts';
import type { ResolvedLimits } from './resolvedLimits.ts';
import { SLOT_COUNT, SLOTS } from './slots.ts';
import type { TenantGovernanceRecord } from './types.ts';

// Status values double as the unresolved cause index of tally.ts while the ceilings are not known.
export const STATUS_PENDING = 0;
export const STATUS_UNREACHABLE = 1;
export const STATUS_UNKNOWN_TENANT = 2;
export const STATUS_KNOWN = 3;

export class TenantState {
  confirmed = false;
  /** Seen on an allowance whose sender is authenticated or operator-trusted (anything but HTTP). */
  trusted = false;
  status = STATUS_PENDING;
  record: TenantGovernanceRecord | null = null;
  limits: ResolvedLimits | null = null;
  /** Platform-defaults version `limits` was resolved against. */
  limitsVersion = -1;
  loading = false;
  refreshDueMs = 0;
  lastSeenMs = 0;
  private lastAllowance: AllowanceState | null = null;
  readonly slots: (AllowanceState | undefined)[] = new Array<AllowanceState | undefined>(SLOT_COUNT).fill(undefined);

  constructor(
    readonly name: string,
    readonly isOverflow = false,
  ) {
    // The overflow allowance is metered at the platform default and never asks the LimitSource.
    if (isOverflow) this.refreshDueMs = Number.POSITIVE_INFINITY;
  }

  allowance(slotIndex: number, limits: ResolvedLimits): AllowanceState {
    // A tenant's traffic mostly hits one allowance in a row; remembering it skips the slots array (two objects).
    let allowance = this.lastAllowance;
    if (allowance === null || allowance.slotIndex !== slotIndex) {
      allowance = this.slots[slotIndex] ?? (this.slots[slotIndex] = new AllowanceState(this.name, SLOTS[slotIndex]!));
      this.lastAllowance = allowance;
    }
    if (allowance.limits !== limits) allowance.useLimits(limits);
    return allowance;
  }
}
