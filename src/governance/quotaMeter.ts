// One tenant's period quota on one dimension: what is used of the current period, counted alone or from slices of
// a shared count (Redis), and the thresholds crossed. take() is synchronous and does no I/O: as the shared rate
// counters do (sharedCounting.ts), a replica reserves slices of the period's quota in the background and admits
// from what it holds.
//
// The shared count is Redis (the SharedBudget's reserveQuota) or, without Redis, the database (a QuotaBudget of
// src/quotas, one row per tenant, dimension and period): the same slices, the same bounds.
//
// Accuracy, per (tenant, dimension, period), with N replicas sharing Redis (or the database), S = ceil(limit / 100):
// - over: never. A replica admits only units the shared count granted it, and the count never grants past the
//   limit. A replica that has no answer yet for the period (just started, a new period, a quota just set) admits
//   nothing on credit: it asks, and refuses meanwhile as QUOTA_WAITING (Retry-After 1 s). Credit before the
//   first answer let one replica admit 14 readings of a daily quota of 10 (a restart, or a first message of
//   several readings, each admitted on credit past a spent quota). So that the wait is rare, the Governor asks
//   as soon as it learns a tenant's quota (at start, on a change), and a replica asks for the next period's
//   first slice in the last minute of the current one.
// - under: a replica may refuse while others still hold units they were granted. What one holds is at most
//   one slice: S while much is left, shrinking to ceil(left / 16) (1 unit at the end) as the quota runs out,
//   so near the limit the others hold at most a few units each. What a replica held when it died is lost to
//   the period (at most a slice per replica and crash).
// - Redis unreachable: each replica admits from what it holds, then alone up to half of what was left at its
//   last answer (as rates fall back to half the limit), so two replicas stay within the quota.
// Counted alone (neither Redis nor a quotaBudget) a replica is exact, and counts only its own admissions.
import { quotaPeriodAt } from './quotaValue.ts';
import type { Dimension, QuotaValue } from './types.ts';

/** Percentages of a quota whose first crossing in a period is noticed (QuotaThresholdCrossed). */
export const DEFAULT_QUOTA_THRESHOLDS: readonly number[] = [50, 80, 100];

export interface QuotaReserveRequest {
  /** `quota:<dimension>:<tenant>:<period start ms>`: a period's count never carries over. */
  key: string;
  limit: number;
  /** The count may expire a day after the period ends. */
  periodEndMs: number;
  wantUnits: number;
  /** The parts of `key`, for a budget that stores them apart (the database's, src/quotas). */
  tenantId: string;
  dimension: Dimension;
  periodStartMs: number;
}

export interface QuotaGrant {
  granted: number;
  /** Units of the limit neither admitted nor held by any replica after this reservation (0 when spent). */
  left: number;
}

/**
 * The part of the SharedBudget port quotas use (sharedCounting.ts), or a budget of its own (the database's when
 * there is no Redis, GovernorOptions.quotaBudget): without either, quotas are counted by each replica alone.
 */
export interface QuotaBudget {
  reserveQuota(request: QuotaReserveRequest): Promise<QuotaGrant>;
}

/** A threshold crossed for the first time this period on this replica (the ledger keeps one per period). */
export interface QuotaThresholdCrossing {
  tenantId: string;
  dimension: Dimension;
  thresholdPercent: number;
  period: QuotaValue['period'];
  periodStartMs: number;
  periodEndMs: number;
  limit: number;
  used: number;
}

/** How long before its period ends a meter in use asks for the next period's first slice. */
export const NEXT_PERIOD_AHEAD_MS = 60_000;

/** One per Governor: the quota budget, whether it is reachable, and reservations in flight. */
export class QuotaSharing {
  available = true;
  failures = 0;
  private inFlight = 0;
  private probeAtMs = 0;
  private readonly waiters: (() => void)[] = [];
  /** Called whenever a reservation settles (the Governor starts queued warm-ups then). */
  onSettled: (() => void) | null = null;

  constructor(
    private readonly budget: QuotaBudget | null,
    private readonly onError: (error: unknown) => void,
    readonly thresholds: readonly number[],
    readonly onThreshold: ((crossing: QuotaThresholdCrossing) => void) | null,
  ) {}

  get shared(): boolean {
    return this.budget !== null;
  }

  /** Reservations on their way to or from the budget. */
  get pending(): number {
    return this.inFlight;
  }

  /** Whether a reservation may be sent at admission time `at`: always while Redis answers, else once a second. */
  mayAsk(at: number): boolean {
    if (this.available) return true;
    if (at < this.probeAtMs) return false;
    this.probeAtMs = at + 1000;
    return true;
  }

  reserve(request: QuotaReserveRequest, onGranted: (grant: QuotaGrant) => void, onSettled: () => void): void {
    this.inFlight++;
    this.budget!.reserveQuota(request)
      .then(
        (grant) => {
          this.available = true;
          onGranted(grant);
        },
        (error: unknown) => {
          this.failures++;
          this.available = false;
          this.onError(error);
        },
      )
      .finally(() => {
        onSettled();
        this.inFlight--;
        // In a promise's reaction: a fault here must not become an unhandled rejection that ends the process.
        try {
          this.onSettled?.();
        } catch (error) {
          this.onError(error);
        }
        if (this.inFlight === 0) for (const resolve of this.waiters.splice(0)) resolve();
      });
  }

  settled(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

export const QUOTA_ADMITTED = 0;
/** Refused: the period's quota is spent (Retry-After: the period's end). */
export const QUOTA_SPENT = 1;
/** Refused: this replica holds too little of the quota and its next slice is on its way (Retry-After: 1 s). */
export const QUOTA_WAITING = 2;

export class QuotaMeter {
  quota: QuotaValue | null = null;
  startMs = Number.POSITIVE_INFINITY;
  endMs = Number.NEGATIVE_INFINITY;
  /** Counted alone: units admitted this period. */
  private used = 0;
  // Shared: the slice held, whether an answer for this period arrived, what Redis had left at the last answer.
  private granted = 0;
  private warm = false;
  private inFlight = false;
  private left = 0;
  private fallbackUsed = 0;
  // Shared: the next period's first slice, asked for in the last minute of this one (NaN: not asked).
  private nextStartMs = Number.NaN;
  private nextAnswered = false;
  private nextGranted = 0;
  private nextLeft = 0;
  /** Index into the thresholds of the next one to notice this period. */
  private nextThreshold = 0;
  /** Where the last admitted take came from (giveBack returns it there): 0 counted alone, 1 slice, 3 fallback. */
  private lastTakeFrom = 0;

  constructor(
    readonly tenantId: string,
    readonly dimension: Dimension,
    private readonly sharing: QuotaSharing,
  ) {}

  /** The quota in force; a change of period, zone or reset day starts counting again. */
  use(quota: QuotaValue): void {
    const previous = this.quota;
    this.quota = quota;
    if (previous === null || previous.period !== quota.period || previous.timeZone !== quota.timeZone || previous.resetDay !== quota.resetDay) {
      this.startMs = Number.POSITIVE_INFINITY;
      this.endMs = Number.NEGATIVE_INFINITY;
      this.nextStartMs = Number.NaN;
    } else if (previous.limit !== quota.limit) {
      this.left += quota.limit - previous.limit;
      if (this.left < 0) this.left = 0;
      this.nextThreshold = 0;
    }
  }

  /**
   * Shared: asks for a first slice now if this period has none yet, so the first request finds one (the
   * Governor calls it when it learns the tenant's quota).
   */
  warmUp(at: number): void {
    if (!this.sharing.shared) return;
    if (!(at >= this.startMs && at < this.endMs)) this.enterPeriod(at);
    if (!this.warm && !this.inFlight && this.sharing.mayAsk(at)) this.ask(this.slice(1));
  }

  /** QUOTA_ADMITTED when `units` fit what is left of the period at `at` (they are then taken), else why not. */
  take(units: number, at: number): number {
    if (!(at >= this.startMs && at < this.endMs)) this.enterPeriod(at);
    const limit = this.quota!.limit;
    const sharing = this.sharing;
    if (!sharing.shared) {
      if (this.used + units > limit) return QUOTA_SPENT;
      this.used += units;
      this.lastTakeFrom = 0;
      return QUOTA_ADMITTED;
    }
    // Only what the shared count granted is admitted: nothing on credit, so never past the limit.
    let outcome = QUOTA_ADMITTED;
    const slice = this.slice(units);
    if (this.granted >= units) {
      this.granted -= units;
      this.lastTakeFrom = 1;
    } else if (!sharing.available) {
      if (this.fallbackUsed + units > this.left / 2) outcome = QUOTA_SPENT;
      else {
        this.fallbackUsed += units;
        this.lastTakeFrom = 3;
      }
    } else outcome = this.warm && this.left + this.granted < units ? QUOTA_SPENT : QUOTA_WAITING;
    // Top up once what is held falls below half a slice (or below this request), unless Redis said the period is
    // spent; while Redis is unreachable, at most one probe a second.
    const low = this.granted < units || 2 * this.granted < slice;
    if (low && !this.inFlight && !(this.warm && this.left <= 0 && sharing.available) && sharing.mayAsk(at)) {
      this.ask(slice - this.granted);
    }
    if (at >= this.endMs - NEXT_PERIOD_AHEAD_MS && this.nextStartMs !== this.endMs && sharing.available) this.askNext();
    return outcome;
  }

  /**
   * The request this quota admitted was refused by the rate after all: the units go back where they came from.
   * Counted alone, the thresholds are noticed here, once the admission is final.
   */
  giveBack(units: number): void {
    this.giveBackTaken(units, this.lastTakeFrom, this.startMs);
  }

  /** Where the last admitted take came from, for giveBackTaken later (a held charge settled as not admitted). */
  get lastTake(): number {
    return this.lastTakeFrom;
  }

  /** Units taken `from` where lastTake said, in the period starting at `periodStartMs`, go back (none once it passed). */
  giveBackTaken(units: number, from: number, periodStartMs: number): void {
    if (periodStartMs !== this.startMs) return;
    if (from === 0) this.used -= units;
    else if (from === 1) this.granted += units;
    else this.fallbackUsed -= units;
  }

  /** After an admission: notices the thresholds it reached. */
  admitted(): void {
    this.noticeUsed(this.sharing.shared ? this.quota!.limit - this.left - this.granted + this.fallbackUsed : this.used);
  }

  /** Units still left for this replica to admit (for answers' `remaining`). */
  remaining(): number {
    if (!this.sharing.shared) return this.quota!.limit - this.used;
    return this.granted + (this.warm ? this.left : this.quota!.limit);
  }

  /** Whole seconds from `at` to the period's end (at least 1). */
  secondsToReset(at: number): number {
    return Math.max(1, Math.ceil((this.endMs - at) / 1000));
  }

  private slice(units: number): number {
    const limit = this.quota!.limit;
    const most = Math.ceil(limit / 100);
    const nearEnd = this.warm ? Math.max(1, Math.ceil(this.left / 16)) : most;
    return Math.max(units, most < nearEnd ? most : nearEnd);
  }

  private enterPeriod(at: number): void {
    const span = quotaPeriodAt(this.quota!, at);
    this.startMs = span.startMs;
    this.endMs = span.endMs;
    this.used = 0;
    this.fallbackUsed = 0;
    this.nextThreshold = 0;
    // The slice asked for ahead, when it is this period's and has arrived; else nothing is known of it yet.
    const ahead = this.nextAnswered && this.nextStartMs === span.startMs;
    this.granted = ahead ? this.nextGranted : 0;
    this.left = ahead ? this.nextLeft : this.quota!.limit;
    this.warm = ahead;
    this.nextAnswered = false;
    if (this.nextStartMs !== span.startMs) this.nextStartMs = Number.NaN;
    if (ahead) this.noticeUsed(this.quota!.limit - this.left - this.granted);
  }

  private request(startMs: number, endMs: number, wantUnits: number): QuotaReserveRequest {
    return {
      key: `quota:${this.dimension}:${this.tenantId}:${startMs}`,
      limit: this.quota!.limit,
      periodEndMs: endMs,
      wantUnits,
      tenantId: this.tenantId,
      dimension: this.dimension,
      periodStartMs: startMs,
    };
  }

  private ask(wantUnits: number): void {
    const startMs = this.startMs;
    this.inFlight = true;
    this.sharing.reserve(
      this.request(startMs, this.endMs, wantUnits),
      (grant) => {
        // An answer for a period that has passed is of no use.
        if (this.startMs === startMs) this.answered(grant);
      },
      () => {
        this.inFlight = false;
      },
    );
  }

  /** The next period's first slice, asked for before it begins so its first requests need not wait. */
  private askNext(): void {
    const next = quotaPeriodAt(this.quota!, this.endMs);
    const startMs = next.startMs;
    this.nextStartMs = startMs;
    this.nextAnswered = false;
    this.sharing.reserve(
      this.request(startMs, next.endMs, Math.ceil(this.quota!.limit / 100)),
      (grant) => {
        if (this.startMs === startMs) this.answered(grant);
        else if (this.nextStartMs === startMs) {
          this.nextAnswered = true;
          this.nextGranted = grant.granted;
          this.nextLeft = grant.left;
        }
      },
      () => {},
    );
  }

  /** An answer for the current period: what it granted is held, and what it left is known. */
  private answered(grant: QuotaGrant): void {
    this.warm = true;
    this.granted += grant.granted;
    this.left = grant.left;
    this.fallbackUsed = 0;
    this.noticeUsed(this.quota!.limit - grant.left - this.granted);
  }

  /** Notices each threshold `used` has reached for the first time this period. */
  private noticeUsed(used: number): void {
    const thresholds = this.sharing.thresholds;
    const onThreshold = this.sharing.onThreshold;
    const quota = this.quota!;
    while (this.nextThreshold < thresholds.length && used * 100 >= thresholds[this.nextThreshold]! * quota.limit) {
      const thresholdPercent = thresholds[this.nextThreshold++]!;
      onThreshold?.({
        tenantId: this.tenantId,
        dimension: this.dimension,
        thresholdPercent,
        period: quota.period,
        periodStartMs: this.startMs,
        periodEndMs: this.endMs,
        limit: quota.limit,
        used: Math.min(used, quota.limit),
      });
    }
  }
}
