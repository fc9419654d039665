// Which tenant names get state of their own. HTTP ingest names its tenant before any credential is checked, so
// anyone can invent names there. On HTTP a name gets its own allowance only if the control plane confirmed it
// (confirmTenant, or the LimitSource knows it) or it holds one of a fixed number of places (1024) for
// unconfirmed names; past that every such name shares one overflow allowance at the platform default.
// Names seen on other allowances come from authenticated or operator-trusted senders and always get their own,
// unless the admit says the name is untrusted (AdmitRequest.untrustedName: Envoy's RLS door, whose tenant is
// whatever the gateway's client sent): then it follows the HTTP rule.
//
// How idle unconfirmed names leave, so junk cannot hold the places forever: an unconfirmed name whose last
// admission is at least `idleMs` (default 60 s) ago is evicted, oldest idle first, but only when the set is
// full and a new name needs the place. The set is kept in least-recently-checked order: looking for a victim
// examines at most EVICTION_PROBES names at the front, evicts the first idle one, and moves busy ones to the
// back, at most once per reading of the clock, so the cost per new name is bounded even when all places are busy. Unconfirmed names of trusted
// senders (which the source may answer as unknown) are swept the same way in the background, idle ones first.
import { AllowanceNumbers } from './allowanceNumbers.ts';
import { TenantMeter } from './tenantMeter.ts';

export const OVERFLOW_TENANT_ID = '(overflow)';
const EVICTION_PROBES = 4;

export class TenantNames {
  readonly states = new Map<string, TenantMeter>();
  /** The token-bucket numbers of every allowance of the states below. */
  readonly numbers = new AllowanceNumbers();
  readonly overflow = new TenantMeter(OVERFLOW_TENANT_ID, this.numbers, true);
  overflowLastUsedMs = Number.NEGATIVE_INFINITY;
  confirmedCount = 0;
  private readonly unconfirmedHttp = new Map<string, TenantMeter>();
  private roomFailedAtMs = Number.NaN;
  private readonly unconfirmedTrusted = new Map<string, TenantMeter>();

  constructor(
    private readonly maxUnconfirmed: number,
    private readonly idleMs: number,
  ) {}

  get unconfirmedCount(): number {
    return this.unconfirmedHttp.size + this.unconfirmedTrusted.size;
  }

  /**
   * State for a name seen on the HTTP allowance: its own, a freed place, or the shared overflow. `existing` is
   * what `states` holds for the name: the Governor looks it up itself on every admit (one lookup per call).
   */
  forHttp(name: string, nowMs: number, existing = this.states.get(name)): TenantMeter {
    if (existing !== undefined) return existing;
    if (this.unconfirmedHttp.size >= this.maxUnconfirmed && !this.makeRoom(nowMs)) {
      this.overflowLastUsedMs = nowMs;
      return this.overflow;
    }
    const state = new TenantMeter(name, this.numbers);
    this.states.set(name, state);
    this.unconfirmedHttp.set(name, state);
    return state;
  }

  /** State for a name seen on an authenticated or trusted allowance: always its own. */
  forTrusted(name: string, existing = this.states.get(name)): TenantMeter {
    if (existing !== undefined) {
      if (!existing.trusted) this.markTrusted(existing);
      return existing;
    }
    const state = new TenantMeter(name, this.numbers);
    state.trusted = true;
    this.states.set(name, state);
    this.unconfirmedTrusted.set(name, state);
    return state;
  }

  /** The control plane registered the name, or the LimitSource knows it: it keeps its own state. */
  confirm(name: string): TenantMeter {
    let state = this.states.get(name);
    if (state === undefined) {
      state = new TenantMeter(name, this.numbers);
      this.states.set(name, state);
    }
    if (!state.confirmed) {
      state.confirmed = true;
      this.confirmedCount++;
      this.unconfirmedHttp.delete(name);
      this.unconfirmedTrusted.delete(name);
    }
    return state;
  }

  /** Background sweep of idle unconfirmed names from trusted senders (bounded work per call). */
  sweepTrusted(nowMs: number, maxProbes: number): void {
    for (let probe = 0; probe < maxProbes && this.unconfirmedTrusted.size > 0; probe++) {
      this.evictIdle(this.unconfirmedTrusted, nowMs, 1);
    }
  }

  /**
   * One probe round per clock reading: under a storm of invented names with every place busy, later names in
   * the same instant go straight to the overflow allowance instead of reshuffling the set again.
   */
  private makeRoom(nowMs: number): boolean {
    if (nowMs === this.roomFailedAtMs) return false;
    if (this.evictIdle(this.unconfirmedHttp, nowMs, EVICTION_PROBES)) return true;
    this.roomFailedAtMs = nowMs;
    return false;
  }

  private markTrusted(state: TenantMeter): void {
    state.trusted = true;
    if (!state.confirmed && this.unconfirmedHttp.delete(state.name)) this.unconfirmedTrusted.set(state.name, state);
  }

  private evictIdle(set: Map<string, TenantMeter>, nowMs: number, maxProbes: number): boolean {
    for (let probe = 0; probe < maxProbes; probe++) {
      const first = set.values().next();
      if (first.done) return false;
      const state = first.value;
      set.delete(state.name);
      if (nowMs - state.lastSeenMs >= this.idleMs) {
        this.states.delete(state.name);
        state.release();
        return true;
      }
      set.set(state.name, state);
    }
    return false;
  }
}
