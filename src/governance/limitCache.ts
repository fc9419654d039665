// The limit cache: learns tenants' ceilings and the platform defaults from the LimitSource in the background,
// batched and single-flight per tenant (a tenant already loading is not asked for again). admit never waits:
// until an answer arrives a tenant is metered at the platform default. Values are refreshed within a TTL and
// served stale while the refresh runs; a failed refresh keeps the last-known values. Two ways in besides the
// admit: `learn` installs ceilings read in bulk at start (every registered tenant, before the service is
// ready), and `reload` reads tenants again at once when a change to their ceilings is announced.
//
// Tenants whose records agree (the tenants of a tier without an override of their own, the common case) share
// one Ceilings and so one ResolvedLimits: a record read is interned by its content, and a tenant keeps only a
// reference to it. Each tenant's own copy was about 17 heap objects (the record's levels, the ResolvedLimits and
// its six arrays), a third of the admitting thread's live objects at 50,000 active tenants, every one of them
// marked again by each full collection (bench/RESULTS.md, the heap snapshot at 50,000).
import { ResolvedLimits } from './resolvedLimits.ts';
import type { Ceilings } from './resolvedLimits.ts';
import { STATUS_KNOWN, STATUS_UNKNOWN_TENANT, STATUS_UNREACHABLE } from './tenantMeter.ts';
import type { TenantMeter } from './tenantMeter.ts';
import type { Dimension, LimitSource, TenantGovernanceRecord } from './types.ts';

export interface LimitCacheOptions {
  limitSource: LimitSource;
  now: () => number;
  ttlMs: number;
  /** How soon a failed read is tried again. */
  retryMs: number;
  batchSize: number;
  maxConcurrentLoads: number;
  /** A tenant the source knows: the Governor confirms it. */
  onKnown: (state: TenantMeter) => void;
  /** The platform defaults changed: every tenant's limits are to be re-resolved. */
  onPlatformChanged: () => void;
  onError: (error: unknown) => void;
}

/**
 * A tenant's values are read again after a TTL shortened by up to this share, drawn per read. Tenants first
 * seen together (a start: 50,000 active tenants in its first second, or `learn` in bulk) came due together:
 * every 30 s all of them were read again and their limits re-resolved on their next admits, ~300 ms of the
 * admitting thread within 2 s and event-loop stalls of up to 140 ms (profiled at 50,000 through the doors).
 * Spread over the last quarter of the TTL, values are still never older than the TTL.
 */
const TTL_SPREAD = 0.25;

/**
 * Distinct Ceilings the cache remembers for interning; past it the index starts again (tenants keep the ones
 * they hold). Tenants with overrides of their own each have their own, so the index is bounded, not the count.
 */
const MAX_INTERNED_CEILINGS = 20_000;

export class LimitCache {
  platformDefaults: Partial<Record<Dimension, unknown>> = {};
  /** Incremented whenever platform defaults change, so tenants re-resolve lazily. */
  platformVersion = 0;
  platformLimits: ResolvedLimits = ResolvedLimits.resolve({}, {});
  platformDueMs = 0;
  platformLoading = false;
  /** A platform change was announced while a read was under way: read once more after it. */
  private platformReloadAgain = false;
  loadFailures = 0;
  private readonly queue: TenantMeter[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly settledWaiters: (() => void)[] = [];
  private readonly pumpBound = () => this.pump();
  /** Ceilings by their content (JSON of tier, policy and levels), for interning. */
  private readonly interned = new Map<string, Ceilings>();

  constructor(private readonly options: LimitCacheOptions) {}

  /** Current limits of a known tenant, re-resolved if the platform defaults changed since. */
  limitsOf(state: TenantMeter): ResolvedLimits {
    if (state.limitsVersion !== this.platformVersion || state.limits === null) {
      const ceilings = state.ceilings!;
      if (ceilings.limitsVersion !== this.platformVersion || ceilings.limits === null) {
        ceilings.limits = ResolvedLimits.resolve(ceilings.levels, this.platformDefaults, ceilings.apiOverLimitPolicy);
        ceilings.limitsVersion = this.platformVersion;
      }
      state.limits = ceilings.limits;
      state.limitsVersion = this.platformVersion;
    }
    return state.limits;
  }

  /** The Ceilings of a record read: the one already held by tenants whose records say the same, or a new one. */
  ceilingsOf(record: TenantGovernanceRecord): Ceilings {
    const apiOverLimitPolicy = record.apiOverLimitPolicy ?? 'EXACT_REJECT';
    const key = JSON.stringify([record.tierId, apiOverLimitPolicy, record.levels]);
    let ceilings = this.interned.get(key);
    if (ceilings === undefined) {
      if (this.interned.size >= MAX_INTERNED_CEILINGS) this.interned.clear();
      ceilings = { tierId: record.tierId, levels: record.levels, apiOverLimitPolicy, limits: null, limitsVersion: -1 };
      this.interned.set(key, ceilings);
    }
    return ceilings;
  }

  /** Called on every admit: starts a background read when the tenant's values are due. */
  refreshIfDue(state: TenantMeter, nowMs: number): void {
    if (nowMs >= state.refreshDueMs && !state.loading) {
      state.loading = true;
      this.queue.push(state);
      this.schedule();
    }
  }

  /** Called whenever the Governor reads the clock. */
  refreshPlatformIfDue(nowMs: number): void {
    if (nowMs >= this.platformDueMs && !this.platformLoading) this.loadPlatformDefaults();
  }

  get pendingLoads(): number {
    return this.queue.length + this.inFlight + (this.platformLoading ? 1 : 0);
  }

  /** Resolves once no read is queued or running (tests and shutdown wait on this, never on a sleep). */
  settled(): Promise<void> {
    if (this.pendingLoads === 0) return Promise.resolve();
    return new Promise((resolve) => this.settledWaiters.push(resolve));
  }

  /** Ceilings read ahead (in bulk, at start): the tenant is known at once and fresh for a TTL. */
  learn(state: TenantMeter, record: TenantGovernanceRecord): void {
    state.ceilings = this.ceilingsOf(record);
    state.limitsVersion = -1;
    state.status = STATUS_KNOWN;
    state.refreshDueMs = this.refreshDueAfter(this.options.now());
    state.fastKey = -1;
    this.options.onKnown(state);
  }

  /** Platform defaults read ahead with the tenants' ceilings. */
  learnPlatformDefaults(defaults: Partial<Record<Dimension, unknown>>): void {
    this.applyPlatformDefaults(defaults);
    this.platformDueMs = this.options.now() + this.options.ttlMs;
  }

  /**
   * A change to these tenants' ceilings was committed: read them again now, whatever their TTL. A read already
   * under way may have read before the commit, so such a tenant is read once more after it.
   */
  reload(state: TenantMeter): void {
    if (state.isOverflow) return;
    if (state.loading) {
      state.reloadAgain = true;
      return;
    }
    state.loading = true;
    this.queue.push(state);
    this.schedule();
  }

  /** A change to the platform defaults was committed: read them again now. */
  reloadPlatformDefaults(): void {
    if (this.platformLoading) this.platformReloadAgain = true;
    else this.loadPlatformDefaults();
  }

  private applyPlatformDefaults(defaults: Partial<Record<Dimension, unknown>>): void {
    if (JSON.stringify(defaults) === JSON.stringify(this.platformDefaults)) return;
    this.platformDefaults = defaults;
    this.platformLimits = ResolvedLimits.resolve({}, defaults);
    this.platformVersion++;
    this.options.onPlatformChanged();
  }

  loadPlatformDefaults(): void {
    this.platformLoading = true;
    this.platformReloadAgain = false;
    this.options.limitSource
      .loadPlatformDefaults()
      .then(
        (defaults) => {
          this.applyPlatformDefaults(defaults);
          this.platformDueMs = this.options.now() + this.options.ttlMs;
        },
        (error: unknown) => {
          this.loadFailures++;
          this.platformDueMs = this.options.now() + this.options.retryMs;
          this.options.onError(error);
        },
      )
      .finally(() => {
        this.platformLoading = false;
        if (this.platformReloadAgain) this.loadPlatformDefaults();
        else this.notifyIfSettled();
      });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // setImmediate rather than a microtask: admits of the current turn join the same batch.
    setImmediate(this.pumpBound);
  }

  private pump(): void {
    this.scheduled = false;
    while (this.queue.length > 0 && this.inFlight < this.options.maxConcurrentLoads) {
      const batch = this.queue.splice(0, this.options.batchSize);
      this.inFlight++;
      void this.loadBatch(batch).finally(() => {
        this.inFlight--;
        if (this.queue.length > 0) this.schedule();
        this.notifyIfSettled();
      });
    }
  }

  private async loadBatch(batch: TenantMeter[]): Promise<void> {
    try {
      const records = await this.options.limitSource.loadTenants(batch.map((state) => state.name));
      const readAtMs = this.options.now();
      for (const state of batch) {
        const record = records.get(state.name);
        if (record) {
          state.ceilings = this.ceilingsOf(record);
          state.limitsVersion = -1;
          state.status = STATUS_KNOWN;
          this.options.onKnown(state);
        } else {
          state.ceilings = null;
          state.limits = null;
          state.status = STATUS_UNKNOWN_TENANT;
        }
        state.refreshDueMs = this.refreshDueAfter(readAtMs);
      }
    } catch (error) {
      this.loadFailures++;
      const retryDueMs = this.options.now() + this.options.retryMs;
      for (const state of batch) {
        // A tenant already read keeps its last-known values through an outage.
        if (state.status !== STATUS_KNOWN) state.status = STATUS_UNREACHABLE;
        state.refreshDueMs = retryDueMs;
      }
      this.options.onError(error);
    } finally {
      for (const state of batch) {
        state.loading = false;
        // Its record or status may have changed: the next admit takes the full path and re-checks.
        state.fastKey = -1;
        if (state.reloadAgain) {
          state.reloadAgain = false;
          state.loading = true;
          this.queue.push(state);
        }
      }
    }
  }

  /** When values read at `readAtMs` are due to be read again: within the TTL, spread (TTL_SPREAD). */
  private refreshDueAfter(readAtMs: number): number {
    return readAtMs + this.options.ttlMs * (1 - TTL_SPREAD * Math.random());
  }

  private notifyIfSettled(): void {
    if (this.pendingLoads > 0 || this.scheduled) return;
    for (const resolve of this.settledWaiters.splice(0)) resolve();
  }
}
