// Shared counting when replicas do not measure a tenant against the same limit, against an in-memory shared
// budget that counts as the Redis window script does. Found with three service replicas behind a proxy
// (test/e2e/replicas.test.ts): a replica that had just started metering a tenant, its ceilings still loading,
// charged the shared window against the platform default while the others charged it against the tenant's
// 1,000,000 a second; their reservations alone passed the default, and it refused the tenant's requests for
// the rest of the window.
import { afterEach, describe, expect, it } from 'vitest';
import { Governor, type ReserveRequest, type SharedBudget } from '../../../src/governance/index.ts';
import { MemoryLimitSource } from './memoryLimitSource.ts';

/**
 * A fixed-window budget as RESERVE_WINDOW keeps it: a count per key and second, debts added up to the limit, grants
 * up to the limit asked under.
 */
class MemoryWindowBudget implements SharedBudget {
  readonly used = new Map<string, number>();
  readonly limitsAsked: number[] = [];
  async reserve(request: ReserveRequest): Promise<number> {
    this.limitsAsked.push(request.ratePerSecond);
    const key = `${request.key}:${Math.floor(request.atMs / 1000)}`;
    const used = Math.min((this.used.get(key) ?? 0) + request.debtUnits, request.ratePerSecond);
    const grant = Math.max(0, Math.min(request.wantUnits, request.ratePerSecond - used));
    this.used.set(key, used + grant);
    return grant;
  }
  async close(): Promise<void> {}
}

const governors: Governor[] = [];
afterEach(async () => {
  for (const governor of governors.splice(0)) await governor.close();
});

const AT = 1_000_000_000;
let clock = AT;

function replica(source: MemoryLimitSource, budget: SharedBudget): Governor {
  const governor = new Governor({ limitSource: source, sharedBudget: budget, now: () => clock, clockReadEveryAdmits: 1 });
  governor.confirmTenant('acme');
  governors.push(governor);
  return governor;
}

const request = { tenant: 'acme', dimension: 'API_REQUESTS', units: 1, at: AT } as const;
/** Starts loading the tenant's ceilings without charging API_REQUESTS. */
const touch = { tenant: 'acme', dimension: 'AI_INFERENCE', units: 0, at: AT } as const;

describe('shared counting across replicas with different views of a limit', () => {
  afterEach(() => {
    clock = AT;
  });

  it('a replica still loading a tenant meters it alone at the platform default, then joins the shared count', async () => {
    const budget = new MemoryWindowBudget();
    const levels = { API_REQUESTS: { override: { ratePerSecond: 1_000_000 } } };
    const loaded = replica(new MemoryLimitSource().tenant('acme', levels), budget);
    loaded.admit(request);
    await loaded.loadsSettled();
    for (let i = 0; i < 10; i++) {
      expect(loaded.admit(request).admitted).toBe(true);
      await loaded.reservationsSettled();
    }
    // The loaded replica's slices alone are past the platform default (5,000 a second).
    expect([...budget.used.values()].reduce((sum, units) => sum + units, 0)).toBeGreaterThan(5_000);

    const loadingSource = new MemoryLimitSource().tenant('acme', levels);
    loadingSource.hold();
    const loading = replica(loadingSource, budget);
    const asked = budget.limitsAsked.length;
    for (let i = 0; i < 50; i++) {
      expect(loading.admit(request).admitted).toBe(true);
      await loading.reservationsSettled();
    }
    // Nothing was asked of the shared budget under the default.
    expect(budget.limitsAsked.slice(asked)).toEqual([]);

    loadingSource.release();
    await loading.loadsSettled();
    for (let i = 0; i < 50; i++) {
      expect(loading.admit(request).admitted).toBe(true);
      await loading.reservationsSettled();
    }
    expect(budget.limitsAsked.slice(asked).length).toBeGreaterThan(0);
    expect(new Set(budget.limitsAsked.slice(asked))).toEqual(new Set([1_000_000]));
  });

  it('asks again within the window once the limit it found spent under is raised', async () => {
    const budget = new MemoryWindowBudget();
    // Another replica used this window's 100 already.
    budget.used.set(`API_REQUESTS:-:readings:{acme}:${Math.floor(AT / 1000)}`, 100);
    const source = new MemoryLimitSource().tenant('acme', { API_REQUESTS: { override: { ratePerSecond: 100 } } });
    const governor = replica(source, budget);
    governor.admit(touch);
    await governor.loadsSettled();
    governor.admit(request);
    await governor.reservationsSettled();
    expect(governor.admit(request).admitted).toBe(false);

    // The override is raised; the replica's cache refreshes (its TTL passed) within the same window.
    source.tenant('acme', { API_REQUESTS: { override: { ratePerSecond: 1_000 } } });
    clock = AT + 31_000;
    governor.admit(touch);
    await governor.loadsSettled();
    governor.admit(request);
    await governor.reservationsSettled();
    expect(governor.admit(request)).toMatchObject({ admitted: true, limit: 1_000 });
  });

  it('holds at most its level: what one replica holds never exceeds a slice when each answer comes before the next request', async () => {
    const budget = new MemoryWindowBudget();
    const governor = replica(new MemoryLimitSource().tenant('acme', { API_REQUESTS: { override: { ratePerSecond: 1_000_000 } } }), budget);
    governor.admit(touch);
    await governor.loadsSettled();
    let mostHeld = 0;
    for (let i = 0; i < 200; i++) {
      const decision = governor.admit(request);
      expect(decision.admitted).toBe(true);
      mostHeld = Math.max(mostHeld, decision.remaining);
      await governor.reservationsSettled();
    }
    // The level is the minimum slice (1% of the limit): little is offered during each round trip.
    expect(mostHeld).toBeLessThanOrEqual(10_000);
    expect([...budget.used.values()].reduce((sum, units) => sum + units, 0)).toBeLessThanOrEqual(200 + 10_000);
  });

  it('debits what replicas admitted alone in a window when they return within it, and nothing of a window that has passed', async () => {
    const budget = new DownableWindowBudget();
    const source = () => new MemoryLimitSource().tenant('acme', { API_REQUESTS: { override: { ratePerSecond: 1_000 } } });
    const replicas = [replica(source(), budget), replica(source(), budget)];
    for (const governor of replicas) {
      governor.admit(touch);
      await governor.loadsSettled();
    }
    const second = Math.floor(AT / 1000);
    budget.down = true;
    let admitted = 0;
    // An earlier window first: what is admitted alone there is owed to no later window.
    for (const governor of replicas) {
      for (let i = 0; i < 1_000; i++) {
        if (governor.admit({ ...request, at: AT - 1000 }).admitted) admitted++;
        if (i === 0) await governor.reservationsSettled();
      }
    }
    admitted = 0;
    for (const governor of replicas) {
      for (let i = 0; i < 1_000; i++) if (governor.admit(request).admitted) admitted++;
      expect(governor.stats().sharedFallbackActive).toBe(true);
    }
    // Each alone at half the limit.
    expect(admitted).toBe(1_000);
    budget.down = false;
    clock += 1_000; // the probe is due (retryMs)
    for (let step = 0; step < 100; step++) {
      for (const governor of replicas) for (let i = 0; i < 20; i++) if (governor.admit(request).admitted) admitted++;
      await Promise.all(replicas.map((governor) => governor.reservationsSettled()));
    }
    expect(replicas.map((governor) => governor.stats().sharedFallbackActive)).toEqual([false, false]);
    // The window's 1,000 were admitted alone; the shared count was debited with them, so the return adds at most
    // the first probe's minimum slice (1 % of the limit), not the whole limit again.
    expect(admitted).toBeLessThanOrEqual(1_000 + 10);
    expect(budget.used.get(`API_REQUESTS:-:readings:{acme}:${second}`)).toBe(1_000);
    // Owed to this window: both replicas' halves, each debited once; nothing to the window that had passed.
    expect(budget.debts).toEqual(new Map([[`API_REQUESTS:-:readings:{acme}:${second}`, 1_000]]));
  });
});

/** MemoryWindowBudget that refuses every reservation while down, as an unreachable Redis does. */
class DownableWindowBudget extends MemoryWindowBudget {
  down = false;
  /** Debts received per key and second. */
  readonly debts = new Map<string, number>();
  override async reserve(request: ReserveRequest): Promise<number> {
    if (this.down) throw new Error('the shared budget is unreachable');
    const key = `${request.key}:${Math.floor(request.atMs / 1000)}`;
    if (request.debtUnits > 0) this.debts.set(key, (this.debts.get(key) ?? 0) + request.debtUnits);
    return super.reserve(request);
  }
}
