// An in-memory LimitSource for Governor tests: the control plane's read model is the real one; this holds
// records in a Map, counts calls, and can be switched unreachable or held until released.
import type { AdmissionSummary, Dimension, LimitSource, Recorder, TenantGovernanceRecord, UnresolvedAdmissionSummary } from '../../../src/governance/index.ts';

export class MemoryLimitSource implements LimitSource {
  readonly records = new Map<string, TenantGovernanceRecord>();
  platformDefaults: Partial<Record<Dimension, unknown>> = {};
  unreachable = false;
  readonly calls: string[][] = [];
  private held: (() => void)[] | null = null;

  tenant(tenantId: string, levels: TenantGovernanceRecord['levels'], extra: Partial<TenantGovernanceRecord> = {}): this {
    this.records.set(tenantId, { tenantId, tierId: 'standard', levels, ...extra });
    return this;
  }

  /** Answers wait until release(). */
  hold(): void {
    this.held = [];
  }

  release(): void {
    const waiting = this.held ?? [];
    this.held = null;
    for (const resolve of waiting) resolve();
  }

  async loadTenants(tenantIds: readonly string[]): Promise<ReadonlyMap<string, TenantGovernanceRecord>> {
    this.calls.push([...tenantIds]);
    await this.wait();
    if (this.unreachable) throw new Error('control plane unreachable');
    const found = new Map<string, TenantGovernanceRecord>();
    for (const id of tenantIds) {
      const record = this.records.get(id);
      if (record) found.set(id, record);
    }
    return found;
  }

  async loadPlatformDefaults(): Promise<Partial<Record<Dimension, unknown>>> {
    await this.wait();
    if (this.unreachable) throw new Error('control plane unreachable');
    return this.platformDefaults;
  }

  private wait(): Promise<void> {
    const held = this.held;
    if (held === null) return Promise.resolve();
    return new Promise((resolve) => held.push(resolve));
  }
}

export class CollectingRecorder implements Recorder {
  readonly admissions: AdmissionSummary[] = [];
  readonly unresolved: UnresolvedAdmissionSummary[] = [];
  failNext = 0;
  calls = 0;

  async record(
    admissions: readonly AdmissionSummary[],
    unresolved: readonly UnresolvedAdmissionSummary[],
  ): Promise<void> {
    this.calls++;
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('ledger unavailable');
    }
    this.admissions.push(...admissions.map((each) => ({ ...each })));
    this.unresolved.push(...unresolved.map((each) => ({ ...each })));
  }

  /** It keeps copies only, so the Governor may make a taken batch's summaries again (as the service's recorders let it). */
  released(): void {}

  total(field: 'admittedUnits' | 'shedUnits' | 'rejectedUnits' | 'admittedMessages' | 'shedMessages' | 'rejectedMessages', tenantId?: string): number {
    return this.admissions.filter((each) => tenantId === undefined || each.tenantId === tenantId).reduce((sum, each) => sum + each[field], 0);
  }
}
