import { afterEach, describe, expect, it } from 'vitest';
import { Governor, HeldCharge, InvalidAdmission } from '../../../src/governance/index.ts';
import type { AdmitRequest, GovernorOptions } from '../../../src/governance/index.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { entriesOf, type AdmissionsRecordedData } from '../../../src/ledger/catalog/admissions.ts';
import { eventBytes } from '../../../src/ledger/appendSize.ts';
import type { EventStore, NewEvent } from '../../../src/ledger/eventStore.ts';
import { CollectingRecorder, MemoryLimitSource } from './memoryLimitSource.ts';

const T0 = 1_800_000_000_000;
let governors: Governor[] = [];
let clock = T0;

function governor(source: MemoryLimitSource, options: Partial<GovernorOptions> = {}): Governor {
  const created = new Governor({ limitSource: source, now: () => clock, clockReadEveryAdmits: 1, ...options });
  governors.push(created);
  return created;
}

afterEach(async () => {
  await Promise.allSettled(governors.map((each) => each.close()));
  governors = [];
  clock = T0;
});

const live = (tenant: string, units: number, at = clock): AdmitRequest => ({ tenant, dimension: 'INGEST', allowance: 'LIVE', units, at });

function admitMany(target: Governor, request: AdmitRequest, times: number): number {
  let admitted = 0;
  for (let i = 0; i < times; i++) if (target.admit(request).admitted) admitted++;
  return admitted;
}

describe('Governor: the limit cache', () => {
  it('meters an unread tenant at the platform default and counts pending admissions, then uses its own ceiling', async () => {
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { tier: { ratePerSecond: 100, burst: 100 } } });
    source.platformDefaults = { INGEST: { ratePerSecond: 500, burst: 500 } };
    const recorder = new CollectingRecorder();
    const gov = governor(source, { recorder });
    const first = gov.admit(live('acme', 300));
    expect(first).toMatchObject({ admitted: true, behaviour: 'ADMIT', limit: 1000, source: 'SHIPPED_DEFAULT', scope: 'tenant' });
    await gov.loadsSettled();
    expect(gov.admit(live('acme', 1, clock + 1)).source).toBe('TIER');
    clock += 1000;
    const decision = gov.admit(live('acme', 150));
    expect(decision).toMatchObject({ admitted: false, behaviour: 'SHED', limit: 100, source: 'TIER' });
    await gov.flush();
    expect(recorder.unresolved).toMatchObject([
      { tenantId: 'acme', dimension: 'INGEST', cause: 'pending', fromSecond: T0 / 1000, units: 300, messages: 1 },
    ]);
    expect(gov.stats()).toMatchObject({ confirmedTenants: 1, unconfirmedNames: 0 });
  });

  it('batches reads and asks once per tenant while a read is in flight', async () => {
    const source = new MemoryLimitSource();
    for (let i = 0; i < 300; i++) source.tenant(`t${i}`, {});
    const gov = governor(source);
    for (let round = 0; round < 5; round++) for (let i = 0; i < 300; i++) gov.admit(live(`t${i}`, 1));
    await gov.loadsSettled();
    expect(source.calls).toHaveLength(1);
    expect(source.calls[0]).toHaveLength(300);
  });

  it('counts unknown-tenant and unreachable causes, and keeps last-known values through an outage', async () => {
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { override: { ratePerSecond: 10, burst: 10 } } });
    const recorder = new CollectingRecorder();
    const gov = governor(source, { recorder, cacheTtlMs: 5000 });
    gov.admit(live('acme', 1));
    gov.admit(live('ghost', 1));
    await gov.loadsSettled();
    source.unreachable = true;
    gov.admit(live('nobody', 1));
    await gov.loadsSettled();
    gov.admit(live('ghost', 2));
    gov.admit(live('nobody', 3));
    clock += 6000; // acme's values are stale: refreshed in the background, and the refresh fails
    const stale = gov.admit(live('acme', 1));
    await gov.loadsSettled();
    expect(stale).toMatchObject({ source: 'TENANT_OVERRIDE', limit: 10 });
    expect(gov.admit(live('acme', 1)).source).toBe('TENANT_OVERRIDE');
    expect(gov.stats().loadFailures).toBeGreaterThan(0);
    await gov.flush();
    const causes = Object.fromEntries(recorder.unresolved.map((each) => [`${each.tenantId}:${each.cause}`, each.units]));
    expect(causes).toEqual({ 'acme:pending': 1, 'ghost:pending': 1, 'ghost:unknown-tenant': 2, 'nobody:pending': 1, 'nobody:unreachable': 3 });
  });

  it('serves stale values while revalidating, then the new ones', async () => {
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { tier: { ratePerSecond: 100 } } });
    const gov = governor(source, { cacheTtlMs: 1000 });
    gov.admit(live('acme', 1));
    await gov.loadsSettled();
    source.tenant('acme', { INGEST: { tier: { ratePerSecond: 200 } } });
    clock += 2000;
    source.hold();
    expect(gov.admit(live('acme', 1)).limit).toBe(100);
    source.release();
    await gov.loadsSettled();
    expect(gov.admit(live('acme', 1)).limit).toBe(200);
  });

  it('reads tenants first seen together again spread over the last quarter of the TTL, none later than the TTL', async () => {
    const source = new MemoryLimitSource();
    const tenants = Array.from({ length: 400 }, (_, i) => `spread-${i}`);
    for (const tenant of tenants) source.tenant(tenant, { INGEST: { tier: { ratePerSecond: 100 } } });
    // Seconds apart: an admit on the fast path checks its tenant's refresh time once a wall-clock second.
    const gov = governor(source, { cacheTtlMs: 10_000 });
    const admitAll = async () => {
      for (const tenant of tenants) gov.admit(live(tenant, 1));
      await gov.loadsSettled();
    };
    await admitAll();
    const readsBefore = source.calls.flat().length;
    const readsSince = () => source.calls.flat().length - readsBefore;
    clock += 7_400;
    await admitAll();
    expect(readsSince()).toBe(0);
    clock += 1_300;
    await admitAll();
    expect(readsSince()).toBeGreaterThan(0);
    expect(readsSince()).toBeLessThan(tenants.length);
    clock += 1_400;
    await admitAll();
    expect(readsSince()).toBe(tenants.length);
  });

  it('re-resolves tenants when the platform defaults change', async () => {
    const source = new MemoryLimitSource().tenant('acme', {});
    const gov = governor(source, { cacheTtlMs: 1000 });
    gov.admit(live('acme', 1));
    await gov.loadsSettled();
    expect(gov.admit(live('acme', 1))).toMatchObject({ source: 'SHIPPED_DEFAULT', limit: 1000 });
    source.platformDefaults = { INGEST: { ratePerSecond: 700 } };
    clock += 2000;
    gov.admit(live('acme', 1));
    await gov.loadsSettled();
    expect(gov.admit(live('acme', 1))).toMatchObject({ source: 'PLATFORM_DEFAULT', limit: 700 });
  });
});

describe('Governor: limits and behaviours', () => {
  async function loaded(tenant = 'acme', levels = {}, extra = {}) {
    const source = new MemoryLimitSource().tenant(tenant, levels, extra);
    const recorder = new CollectingRecorder();
    const gov = governor(source, { recorder });
    gov.confirmTenant(tenant);
    gov.admit({ tenant, dimension: 'AI_INFERENCE', units: 0, at: clock });
    await gov.loadsSettled();
    return { gov, recorder };
  }

  it('charges a backlog drained after a restart as it happened (send times)', async () => {
    const { gov } = await loaded('acme', { INGEST: { tier: { ratePerSecond: 100, burst: 100 } } });
    // Ten minutes of backlog sent at 100 readings/s, drained in one go: all of it fits, as it did when sent.
    const sentFrom = clock - 600_000;
    let admitted = 0;
    for (let i = 0; i < 6000; i++) {
      if (gov.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'BACKLOG', units: 1, at: sentFrom + i * 100 }).admitted) admitted++;
    }
    expect(admitted).toBe(6000);
    // The same volume sent within one second is over the limit as it was then.
    let burst = 0;
    for (let i = 0; i < 6000; i++) {
      if (gov.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'BACKLOG', units: 1, at: clock + 10_000 }).admitted) burst++;
    }
    expect(burst).toBe(100);
    // Live traffic has its own allowance.
    expect(gov.admit(live('acme', 50)).admitted).toBe(true);
  });

  it('meters EGRESS on the triggering telemetry arrival time', async () => {
    const { gov } = await loaded();
    const arrivedAt = clock - 3000;
    const actions = (at: number) => admitMany(gov, { tenant: 'acme', dimension: 'EGRESS', allowance: 'DETECTION', units: 1, at }, 250);
    expect(actions(arrivedAt)).toBe(200); // burst 200
    expect(actions(arrivedAt + 1000)).toBe(100); // one second of arrival time refills 100
    expect(gov.admit({ tenant: 'acme', dimension: 'EGRESS', allowance: 'CONNECTORS', units: 1, at: arrivedAt }).admitted).toBe(true);
  });

  it('answers each allowance with its over-limit behaviour', async () => {
    const { gov } = await loaded('acme', { INGEST: { tier: { ratePerSecond: 10, burst: 10 } }, AI_INFERENCE: { tier: { ratePerSecond: 1, burst: 1 } } });
    const over = (allowance: 'LIVE' | 'HTTP' | 'INTEGRATIONS') => gov.admit({ tenant: 'acme', dimension: 'INGEST', allowance, units: 11, at: clock });
    expect(over('LIVE')).toMatchObject({ admitted: false, behaviour: 'SHED' });
    expect(over('HTTP')).toMatchObject({ admitted: false, behaviour: 'REJECT', limit: 10, retryAfterSeconds: 1, remaining: 10 });
    expect(over('INTEGRATIONS')).toMatchObject({ admitted: false, behaviour: 'DROP_ACCEPTED' });
    gov.admit({ tenant: 'acme', dimension: 'AI_INFERENCE', units: 1, at: clock });
    expect(gov.admit({ tenant: 'acme', dimension: 'AI_INFERENCE', units: 1, at: clock })).toMatchObject({ admitted: false, behaviour: 'REJECT', retryAfterSeconds: 1 });
    expect(gov.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', units: 100, at: clock })).toMatchObject({ retryAfterSeconds: 1 });
  });

  it('applies the tenant API policy: exact reject or stable downsample', async () => {
    const { gov } = await loaded('acme', { API_REQUESTS: { override: { ratePerSecond: 100 } } }, { apiOverLimitPolicy: 'STABLE_DOWNSAMPLE' });
    const second = Math.floor(clock / 1000) * 1000 + 1000;
    const byCaller = new Map<string, Set<boolean>>();
    for (let w = 0; w < 3; w++) {
      let admitted = 0;
      for (let round = 0; round < 5; round++) {
        for (let c = 0; c < 100; c++) {
          const decision = gov.admit({ tenant: 'acme', dimension: 'API_REQUESTS', units: 1, at: second + w * 1000 + round, callerKey: `caller-${c}` });
          if (decision.admitted) admitted++;
          else expect(decision.behaviour).toBe('STABLE_DOWNSAMPLE');
          if (w === 2) byCaller.set(`caller-${c}`, (byCaller.get(`caller-${c}`) ?? new Set()).add(decision.admitted));
        }
      }
      expect(admitted).toBeLessThanOrEqual(200);
    }
    for (const outcomes of byCaller.values()) expect(outcomes.size).toBe(1);
    const exact = await loaded('other', { API_REQUESTS: { override: { ratePerSecond: 100 } } });
    expect(admitMany(exact.gov, { tenant: 'other', dimension: 'API_REQUESTS', units: 1, at: second }, 150)).toBe(100);
  });

  it('charges messages before decoding separately from readings, at the same numbers', async () => {
    const { gov, recorder } = await loaded('acme', { INGEST: { tier: { ratePerSecond: 5, burst: 5 } } });
    const message = { tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', units: 1, at: clock, charge: 'message' } as const;
    expect(admitMany(gov, message, 8)).toBe(5);
    expect(gov.admit({ ...message, units: 4, charge: 'readings' }).admitted).toBe(true);
    expect(() => gov.admit({ ...message, allowance: 'SPARKPLUG' })).toThrow(InvalidAdmission);
    await gov.flush();
    const [http] = recorder.admissions.filter((each) => each.allowance === 'HTTP');
    expect(http).toMatchObject({ rejectedMessages: 3, rejectedUnits: 0, admittedUnits: 4, admittedMessages: 1 });
  });

  it('meets readings charges out of arrival order with no refill for the earlier instant: a full bucket falls behind the message bucket', async () => {
    // The HTTP door meters both charges at a request's arrival, but charges readings when the body is in: B,
    // which arrived 100 ms after A, may be decoded first (docs/governance-model.md, "A reading is one stored value").
    const { gov } = await loaded('acme', { INGEST: { tier: { ratePerSecond: 5, burst: 10 } } });
    const at = (ms: number, charge?: 'message') => ({ tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', units: 1, at: clock + ms, charge }) as const;
    expect([gov.admit(at(0, 'message')).admitted, gov.admit(at(100, 'message')).admitted]).toEqual([true, true]);
    // The message bucket: 10, 9 at A; 9.5, 8.5 at B. The readings bucket: 10 (full), 9 at B; 8 at A, nothing added.
    expect([gov.admit(at(100)).admitted, gov.admit(at(0)).admitted]).toEqual([true, true]);
    expect(admitMany(gov, at(100, 'message'), 8)).toBe(8);
    expect(admitMany(gov, at(100), 8)).toBe(8);
    // 100 ms on: the message bucket holds 0.5 + 0.5, the readings bucket 0 + 0.5.
    expect(gov.admit(at(200, 'message')).admitted).toBe(true);
    expect(gov.admit(at(200))).toMatchObject({ admitted: false, neverFits: false });
  });

  it('says when a request can never fit (larger than the burst) and tallies it as rejected, on either path', async () => {
    const { gov, recorder } = await loaded('acme', { INGEST: { tier: { ratePerSecond: 1000, burst: 2000 } }, API_REQUESTS: { override: { ratePerSecond: 100 } } });
    const http = (units: number) => gov.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', units, at: clock });
    // The first readings charge takes the full path; the repeats take the fast path.
    expect(http(1)).toMatchObject({ admitted: true, neverFits: false, burst: 2000 });
    expect(http(90_000)).toMatchObject({ admitted: false, neverFits: true, burst: 2000, behaviour: 'REJECT' });
    expect(http(1999)).toMatchObject({ admitted: true, neverFits: false });
    expect(http(2000)).toMatchObject({ admitted: false, neverFits: false, burst: 2000 });
    // On an allowance that sheds, the decision says SHED for the door, and the tally says rejected.
    expect(gov.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 5000, at: clock })).toMatchObject({
      admitted: false,
      behaviour: 'SHED',
      neverFits: true,
    });
    // A fixed window's most is its limit per window.
    expect(gov.admit({ tenant: 'acme', dimension: 'API_REQUESTS', units: 101, at: clock })).toMatchObject({ neverFits: true, burst: 100 });
    expect(gov.admit({ tenant: 'acme', dimension: 'API_REQUESTS', units: 100, at: clock })).toMatchObject({ admitted: true, neverFits: false });
    await gov.flush();
    const sum = (allowance: string | null, field: 'rejectedUnits' | 'shedUnits') =>
      recorder.admissions.filter((each) => each.allowance === allowance).reduce((total, each) => total + each[field], 0);
    expect(sum('HTTP', 'rejectedUnits')).toBe(92_000);
    expect(sum('LIVE', 'rejectedUnits')).toBe(5000);
    expect(sum('LIVE', 'shedUnits')).toBe(0);
    expect(sum(null, 'rejectedUnits')).toBe(101);
  });

  it('answers issue 34’s 999,999,999 AI_INFERENCE units (limit 5/s, burst 10) as never fitting on either path, and they take nothing', async () => {
    const source = new MemoryLimitSource().tenant('acme', { AI_INFERENCE: { override: { ratePerSecond: 5, burst: 10 } } });
    const recorder = new CollectingRecorder();
    const gov = governor(source, { recorder });
    const inference = (units: number): AdmitRequest => ({ tenant: 'acme', dimension: 'AI_INFERENCE', units, at: clock });
    gov.admit(inference(0));
    await gov.loadsSettled();
    // The full path (first call after the limits landed), then the fast path (the same pair again).
    expect(gov.admit(inference(999_999_999))).toMatchObject({ admitted: false, neverFits: true, burst: 10 });
    expect(gov.admit(inference(999_999_999))).toMatchObject({ admitted: false, neverFits: true, burst: 10 });
    expect(gov.admit(inference(11))).toMatchObject({ admitted: false, neverFits: true });
    // The whole burst is still there.
    expect(gov.admit(inference(10))).toMatchObject({ admitted: true, neverFits: false });
    await gov.flush();
    expect(recorder.total('admittedUnits', 'acme')).toBe(10);
    expect(recorder.total('rejectedUnits', 'acme')).toBe(2 * 999_999_999 + 11);
  });

  it('holds an admitted readings charge until it is settled: admitted, unauthenticated (apart) or withdrawn (not counted)', async () => {
    const { gov, recorder } = await loaded('acme', { INGEST: { tier: { ratePerSecond: 10, burst: 30 } } });
    const request = { tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', units: 10, at: clock } as const;
    const taken = gov.chargeUntilSettled(request);
    const unauthenticated = gov.chargeUntilSettled(request);
    const withdrawn = gov.chargeUntilSettled(request);
    const refused = gov.chargeUntilSettled(request);
    expect([taken, unauthenticated, withdrawn, refused].map((each) => each.decision.admitted)).toEqual([true, true, true, false]);
    // Nothing admitted is counted before it is settled.
    await gov.flush();
    expect(recorder.admissions.filter((each) => each.allowance === 'HTTP')).toMatchObject([{ admittedUnits: 0, rejectedUnits: 10, rejectedMessages: 1 }]);
    taken.settle('admitted');
    taken.settle('unauthenticated'); // only the first settle counts
    unauthenticated.settle('unauthenticated');
    withdrawn.settle('withdrawn');
    refused.settle('admitted'); // a refusal was counted when it was decided
    await gov.flush();
    const http = recorder.admissions.filter((each) => each.allowance === 'HTTP');
    const sum = (field: 'admittedUnits' | 'admittedMessages' | 'rejectedUnits' | 'unauthenticatedUnits' | 'unauthenticatedMessages') =>
      http.reduce((total, each) => total + (each[field] ?? 0), 0);
    expect([sum('admittedUnits'), sum('admittedMessages'), sum('rejectedUnits'), sum('unauthenticatedUnits'), sum('unauthenticatedMessages')]).toEqual([
      10, 1, 10, 10, 1,
    ]);
    // Unauthenticated units are no limit hit, and the tokens stay spent: the allowance still bounds a flood.
    expect(http.reduce((total, each) => total + each.hitSeconds, 0)).toBe(1);
    expect(gov.admit({ ...request, units: 1 }).admitted).toBe(false);
    expect(() => gov.chargeUntilSettled({ ...request, charge: 'message' })).toThrow(InvalidAdmission);
  });

  it("decide and hold answer with the Governor's own record, the same object every call; hold holds in the caller's charge", async () => {
    const { gov, recorder } = await loaded('acme', { INGEST: { tier: { ratePerSecond: 10, burst: 30 } } });
    const request = { tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', units: 10, at: clock } as const;
    const first = gov.decide(request);
    expect(first.admitted).toBe(true);
    const charge = new HeldCharge();
    const held = gov.hold(request, charge);
    expect(held).toBe(first);
    expect(held.remaining).toBe(10);
    charge.settle('admitted');
    expect(charge.settled).toBe(true);
    // Settled, the charge may be held again.
    expect(gov.hold(request, charge).admitted).toBe(true);
    charge.settle('unauthenticated');
    expect(gov.hold(request, charge)).toMatchObject({ admitted: false, neverFits: false });
    await gov.flush();
    const http = recorder.admissions.filter((each) => each.allowance === 'HTTP');
    const sum = (field: 'admittedUnits' | 'rejectedUnits' | 'unauthenticatedUnits') => http.reduce((total, each) => total + (each[field] ?? 0), 0);
    expect([sum('admittedUnits'), sum('unauthenticatedUnits'), sum('rejectedUnits')]).toEqual([20, 10, 10]);
    expect(() => gov.hold({ ...request, charge: 'message' }, new HeldCharge())).toThrow(InvalidAdmission);
  });

  it('refuses calls it cannot meter with a typed error', async () => {
    const { gov } = await loaded();
    expect(() => gov.admit({ tenant: 'acme', dimension: 'UNDELIVERED_COMMANDS', units: 1, at: clock })).toThrow(InvalidAdmission);
    expect(() => gov.admit({ tenant: 'acme', dimension: 'INGEST', units: 1, at: clock })).toThrow(InvalidAdmission);
    expect(() => gov.admit({ tenant: 'acme', dimension: 'AI_INFERENCE', allowance: 'LIVE', units: 1, at: clock })).toThrow(InvalidAdmission);
    expect(() => gov.admit(live('acme', Number.NaN))).toThrow(InvalidAdmission);
    expect(() => gov.admit(live('acme', -1))).toThrow(InvalidAdmission);
  });
});

describe('Governor: aggregates', () => {
  it('hands per-second summaries to the recorder with every unit counted', async () => {
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { tier: { ratePerSecond: 10, burst: 10 } } });
    const recorder = new CollectingRecorder();
    const gov = governor(source, { recorder });
    gov.confirmTenant('acme');
    gov.admit(live('acme', 0));
    await gov.loadsSettled();
    await gov.flush();
    const base = Math.floor(clock / 1000) * 1000 + 1000;
    for (let s = 0; s < 3; s++) {
      for (let i = 0; i < 15; i++) gov.admit(live('acme', 1, base + s * 1000));
      clock = base + s * 1000 + 1000; // the flush timer runs each second
      await gov.flush();
    }
    const seconds = recorder.admissions.filter((each) => each.fromSecond >= base / 1000);
    expect(seconds.map((each) => [each.fromSecond - base / 1000, each.seconds, each.admittedUnits, each.shedUnits, each.hitSeconds])).toEqual([
      [0, 1, 10, 5, 1],
      [1, 1, 10, 5, 1],
      [2, 1, 10, 5, 1],
    ]);
  });

  it('offers a failed batch again unchanged, puts what came after it in one batch, and loses no count', async () => {
    const source = new MemoryLimitSource().tenant('acme', {});
    const recorder = new CollectingRecorder();
    recorder.failNext = 2;
    const errors: string[] = [];
    const gov = governor(source, { recorder, onError: (_error, during) => errors.push(during) });
    for (let s = 0; s < 5; s++) {
      for (let i = 0; i < 7; i++) gov.admit(live('acme', 3, clock + s * 1000));
      if (s < 2) await expect(gov.flush()).rejects.toThrow('ledger unavailable');
    }
    await gov.close();
    expect(errors).toEqual(['record', 'record']);
    expect(recorder.total('admittedUnits', 'acme')).toBe(105);
    expect(recorder.total('admittedMessages', 'acme')).toBe(35);
    // The first batch the recorder failed is offered again as it was (under its id, so a commit hidden by the
    // failure is not stored twice); the seconds counted meanwhile go into one batch after it, a summary per
    // second (no summary spans more than the flush interval, 1 s here).
    expect(recorder.admissions.filter((each) => each.tenantId === 'acme')).toMatchObject([
      { fromSecond: T0 / 1000, seconds: 1, admittedUnits: 21 },
      { fromSecond: T0 / 1000 + 1, seconds: 1, admittedUnits: 21 },
      { fromSecond: T0 / 1000 + 2, seconds: 1, admittedUnits: 21 },
      { fromSecond: T0 / 1000 + 3, seconds: 1, admittedUnits: 21 },
      { fromSecond: T0 / 1000 + 4, seconds: 1, admittedUnits: 21 },
    ]);
    expect(gov.stats().recordFailures).toBe(2);
  });
});

describe('Governor with the ledger recorder: appends of a bounded size', () => {
  it('stores each count once when a later append of a batch fails after earlier ones were stored', async () => {
    const maxAppendBytes = 1_000;
    const appended: NewEvent[][] = [];
    let appendsToFail = new Set([2]);
    let calls = 0;
    const store: Pick<EventStore, 'append'> = {
      async append(_stream, events) {
        calls++;
        if (appendsToFail.delete(calls)) throw new Error('ledger unavailable');
        appended.push([...events]);
        return { nextRevision: BigInt(appended.length), position: { commit: BigInt(calls), prepare: 0n } };
      },
    };
    const tenants = Array.from({ length: 40 }, (_, n) => `tenant-${n}`);
    const source = new MemoryLimitSource();
    for (const tenant of tenants) source.tenant(tenant, {});
    const gov = governor(source, { recorder: createLedgerRecorder(store, { maxAppendBytes }), onError: () => {} });
    for (const tenant of tenants) gov.admit(live(tenant, 2));
    await gov.loadsSettled();
    for (const tenant of tenants) gov.admit(live(tenant, 3));
    clock += 1000;
    await expect(gov.flush()).rejects.toThrow(/recorded \d+ summaries, then failed: ledger unavailable/);
    appendsToFail = new Set();
    await gov.close();

    expect(appended.length).toBeGreaterThan(2);
    for (const append of appended) expect(append.reduce((sum, event) => sum + eventBytes(event), 0)).toBeLessThanOrEqual(maxAppendBytes);
    const entries = appended.flat().flatMap((event) => (event.type === 'AdmissionsRecorded' ? entriesOf(event.data as AdmissionsRecordedData) : []));
    const units = new Map<string, number>();
    for (const entry of entries) units.set(entry.tenantId, (units.get(entry.tenantId) ?? 0) + entry.admittedUnits);
    expect(units).toEqual(new Map(tenants.map((tenant) => [tenant, 5])));
  });
});

describe('Governor: names that cannot be confirmed', () => {
  const http = (tenant: string): AdmitRequest => ({ tenant, dimension: 'INGEST', allowance: 'HTTP', units: 1, at: clock });

  it('gives 1024 unconfirmed names their own allowance, then shares one overflow allowance', () => {
    const gov = governor(new MemoryLimitSource());
    for (let i = 0; i < 1024; i++) expect(gov.admit(http(`junk-${i}`)).scope).toBe('tenant');
    expect(gov.overflowInUse).toBe(false);
    const overflow = gov.admit(http('junk-new'));
    expect(overflow).toMatchObject({ scope: 'overflow', limit: 1000 });
    expect(gov.overflowInUse).toBe(true);
    expect(gov.stats()).toMatchObject({ tenantStates: 1024, unconfirmedNames: 1024 });
    gov.confirmTenant('real');
    expect(gov.admit(http('real')).scope).toBe('tenant');
    // Trusted transports always get their own allowance.
    expect(gov.admit(live('mqtt-tenant', 1)).scope).toBe('tenant');
  });

  it('lets an idle unconfirmed name give its place to a new one, oldest idle first', () => {
    const gov = governor(new MemoryLimitSource(), { maxUnconfirmedNames: 4, unconfirmedIdleMs: 60_000 });
    for (let i = 0; i < 4; i++) gov.admit(http(`junk-${i}`));
    clock += 30_000;
    gov.admit(http('junk-0'));
    expect(gov.admit(http('new-a')).scope).toBe('overflow');
    clock += 40_000; // junk-1..3 idle 70 s, junk-0 idle 40 s
    expect(gov.admit(http('new-a')).scope).toBe('tenant');
    expect(gov.admit(http('new-b')).scope).toBe('tenant');
    expect(gov.admit(http('new-c')).scope).toBe('tenant');
    expect(gov.admit(http('new-d')).scope).toBe('overflow');
    expect(gov.admit(http('junk-0')).scope).toBe('tenant');
    expect(gov.stats().tenantStates).toBe(4);
  });

  it('confirms a name the LimitSource knows and frees its unconfirmed place', async () => {
    const source = new MemoryLimitSource().tenant('known', {});
    const gov = governor(source, { maxUnconfirmedNames: 1 });
    gov.admit(http('known'));
    await gov.loadsSettled();
    expect(gov.stats()).toMatchObject({ confirmedTenants: 1, unconfirmedNames: 0 });
    expect(gov.admit(http('other')).scope).toBe('tenant');
  });
});
