// Bounded tenant labels: the busiest `named` tenants appear by name, every other tenant as "_other", so a
// platform with 100,000 tenants still exports a bounded number of series. "Busiest" is kept by a
// space-saving sketch of units seen and messages refused (4 x `named` counters, decaying with a 10-minute half-life), and the
// named set is re-chosen at most once per `refreshMs`, so a label does not flap between a tenant's name
// and "_other" from one batch to the next. Only confirmed tenants (registered with the control plane) are
// ever named: anyone may invent tenant names at the HTTP ingest door, and 2,000 invented names must not take
// the named places; their units count under "_other".

import { SpaceSavingSketch } from './spaceSaving.ts';

// Tenant IDs start with a letter or digit (ID_PATTERN), so this label can never be a real tenant's name.
export const OTHER_TENANTS = '_other';

export interface TenantLabelOptions {
  /** How many tenants are labelled by name. */
  named: number;
  refreshMs?: number;
  halfLifeMs?: number;
  now?: () => number;
}

export class TenantLabels {
  private readonly sketch: SpaceSavingSketch;
  private readonly namedTenants = new Set<string>();
  private readonly refreshMs: number;
  private readonly halfLifeMs: number;
  private readonly now: () => number;
  private lastRefresh: number;
  /**
   * Whether a name is a registered tenant; the service sets it to the Governor's `isConfirmed`. Names it
   * refuses are never observed and always labelled "_other". Default: every name (tests of the sketch alone).
   */
  isConfirmed: (tenantId: string) => boolean = () => true;
  /** Called with the tenants that lost their name, so their series can be removed. */
  onDemoted: (tenants: readonly string[]) => void = () => {};

  constructor(readonly options: TenantLabelOptions) {
    if (!Number.isInteger(options.named) || options.named < 0) throw new RangeError('named tenants must be a whole number, at least 0');
    this.sketch = new SpaceSavingSketch(Math.max(1, options.named * 4));
    this.refreshMs = options.refreshMs ?? 60_000;
    this.halfLifeMs = options.halfLifeMs ?? 10 * 60_000;
    this.now = options.now ?? Date.now;
    this.lastRefresh = this.now();
  }

  /** Counts `weight` units for the tenant (call for every tenant of a batch before labelling it). */
  observe(tenantId: string, weight: number): void {
    if (weight > 0 && this.isConfirmed(tenantId)) this.sketch.add(tenantId, weight);
  }

  /** The tenant's label. While the named set has room, a tenant takes a name at once. */
  label(tenantId: string): string {
    if (this.namedTenants.has(tenantId)) return tenantId;
    if (this.namedTenants.size < this.options.named && this.isConfirmed(tenantId)) {
      this.namedTenants.add(tenantId);
      return tenantId;
    }
    return OTHER_TENANTS;
  }

  /** Re-chooses the named set from the sketch when `refreshMs` has passed; reports the demoted. */
  refreshIfDue(): void {
    const now = this.now();
    const elapsed = now - this.lastRefresh;
    if (elapsed < this.refreshMs) return;
    this.lastRefresh = now;
    this.sketch.decay(0.5 ** (elapsed / this.halfLifeMs));
    const busiest = new Set(this.sketch.top(this.options.named));
    const demoted = [...this.namedTenants].filter((tenant) => !busiest.has(tenant));
    this.namedTenants.clear();
    for (const tenant of busiest) this.namedTenants.add(tenant);
    if (demoted.length > 0) this.onDemoted(demoted);
  }

  named(): string[] {
    return [...this.namedTenants];
  }
}
