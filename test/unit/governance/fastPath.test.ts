// admit's fast path must be invisible: a Governor with it and one without, fed the same calls, clock, source
// changes and load completions, answer every call the same and record the same counts. Readings charges are
// also held (Governor.hold) and settled each way, as the HTTP ingest door holds them.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Governor, HeldCharge } from '../../../src/governance/index.ts';
import type { ChargeOutcome } from '../../../src/governance/index.ts';
import type { AdmitRequest } from '../../../src/governance/index.ts';
import { CollectingRecorder, MemoryLimitSource } from './memoryLimitSource.ts';

const T0 = 1_800_000_000_000;
const TENANTS = ['acme', 'globex', 'ghost', 'walk-in'] as const;
const CALLS: Omit<AdmitRequest, 'tenant' | 'units' | 'at'>[] = [
  { dimension: 'INGEST', allowance: 'LIVE' },
  { dimension: 'INGEST', allowance: 'LIVE' },
  { dimension: 'INGEST', allowance: 'HTTP' },
  { dimension: 'INGEST', allowance: 'HTTP', charge: 'message' },
  { dimension: 'INGEST', allowance: 'BACKLOG', charge: 'message' },
  { dimension: 'INGEST', allowance: 'INTEGRATIONS' },
  { dimension: 'EGRESS', allowance: 'DETECTION' },
  { dimension: 'API_REQUESTS', callerKey: 'sdk-1' },
  { dimension: 'AI_INFERENCE' },
];

type Step =
  | { kind: 'admit'; tenant: number; call: number; units: number; late: number; repeat: number; held: ChargeOutcome | null }
  | { kind: 'clock'; ms: number }
  | { kind: 'settle' }
  | { kind: 'tenantLimit'; tenant: number; rate: number }
  | { kind: 'platformLimit'; rate: number }
  | { kind: 'confirm'; tenant: number }
  | { kind: 'outage'; unreachable: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant('admit' as const),
      tenant: fc.nat(TENANTS.length - 1),
      call: fc.nat(CALLS.length - 1),
      units: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constantFrom(0.5, 2.25, -1, Number.NaN, Infinity)),
      late: fc.constantFrom(0, 0, 0, -1500, 250),
      repeat: fc.integer({ min: 1, max: 30 }),
      held: fc.constantFrom(null, null, 'admitted' as const, 'unauthenticated' as const, 'withdrawn' as const),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('clock' as const), ms: fc.constantFrom(1, 40, 999, 1000, 5_001, 31_000) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('settle' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('tenantLimit' as const), tenant: fc.nat(1), rate: fc.integer({ min: 1, max: 60 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('platformLimit' as const), rate: fc.integer({ min: 1, max: 60 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('confirm' as const), tenant: fc.nat(TENANTS.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('outage' as const), unreachable: fc.boolean() }) },
);

function source(): MemoryLimitSource {
  return new MemoryLimitSource()
    .tenant('acme', { INGEST: { tier: { ratePerSecond: 30, burst: 45 } }, AI_INFERENCE: { override: { ratePerSecond: 3 } } })
    .tenant('globex', { INGEST: { override: { ratePerSecond: 8 } }, API_REQUESTS: { tier: { ratePerSecond: 5 } } }, {
      apiOverLimitPolicy: 'STABLE_DOWNSAMPLE',
    });
}

function outcome(governor: Governor, request: AdmitRequest, held: ChargeOutcome | null): unknown {
  try {
    if (held === null || request.charge === 'message') return governor.admit(request);
    const charge = new HeldCharge();
    const decision = { ...governor.hold(request, charge) };
    charge.settle(held);
    return decision;
  } catch (error) {
    return { threw: (error as Error).name };
  }
}

const byKey = (rows: readonly object[]) => rows.map((row) => JSON.stringify(row)).sort();

describe('Governor: the fast path', () => {
  it('answers and counts exactly as the full path does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 60 }), fc.constantFrom(1, 7), async (steps, clockReadEveryAdmits) => {
        let clock = T0;
        const sources = [source(), source()];
        const recorders = [new CollectingRecorder(), new CollectingRecorder()];
        const governors = [true, false].map(
          (fastPath, i) =>
            new Governor({
              limitSource: sources[i]!,
              recorder: recorders[i]!,
              now: () => clock,
              clockReadEveryAdmits,
              cacheTtlMs: 30_000,
              retryMs: 5_000,
              flushIntervalMs: 1e9,
              maxUnconfirmedNames: 2,
              fastPath,
            }),
        );
        const [fast, full] = governors as [Governor, Governor];
        try {
          for (const each of steps) {
            if (each.kind === 'admit') {
              const request = { ...CALLS[each.call]!, tenant: TENANTS[each.tenant]!, units: each.units, at: clock + each.late };
              for (let i = 0; i < each.repeat; i++) expect(outcome(fast, request, each.held)).toEqual(outcome(full, request, each.held));
            } else if (each.kind === 'clock') clock += each.ms;
            else if (each.kind === 'settle') await Promise.all(governors.map((governor) => governor.loadsSettled()));
            else if (each.kind === 'tenantLimit') {
              for (const s of sources) s.tenant(TENANTS[each.tenant]!, { INGEST: { override: { ratePerSecond: each.rate } } });
            } else if (each.kind === 'platformLimit') {
              for (const s of sources) s.platformDefaults = { INGEST: { ratePerSecond: each.rate }, EGRESS: { ratePerSecond: each.rate } };
            } else if (each.kind === 'confirm') for (const governor of governors) governor.confirmTenant(TENANTS[each.tenant]!);
            else for (const s of sources) s.unreachable = each.unreachable;
          }
          await Promise.all(governors.map((governor) => governor.loadsSettled()));
          expect(fast.stats()).toEqual(full.stats());
        } finally {
          for (const s of sources) s.unreachable = false;
          await Promise.all(governors.map((governor) => governor.close()));
        }
        expect(byKey(recorders[0]!.admissions)).toEqual(byKey(recorders[1]!.admissions));
        expect(byKey(recorders[0]!.unresolved)).toEqual(byKey(recorders[1]!.unresolved));
      }),
      { numRuns: 1000 },
    );
  });

  // The two ways a tenant's numbers change under a state the fast path vouched for, spelled out.
  async function vouched(limitSource: MemoryLimitSource, request: () => AdmitRequest, clock: { ms: number }, firstAdmitAfterMs = 0) {
    const governor = new Governor({ limitSource, now: () => clock.ms, clockReadEveryAdmits: 1, cacheTtlMs: 30_000 });
    await governor.loadsSettled(); // the platform defaults, read at construction
    clock.ms += firstAdmitAfterMs;
    governor.admit(request());
    await governor.loadsSettled();
    governor.admit(request());
    return governor;
  }

  it('meters at a refreshed tenant record from the first admit after the refresh lands', async () => {
    const clock = { ms: T0 };
    const limitSource = source();
    const request = () => ({ tenant: 'acme', dimension: 'INGEST' as const, allowance: 'LIVE' as const, units: 1, at: clock.ms });
    const governor = await vouched(limitSource, request, clock);
    try {
      expect(governor.admit(request()).limit).toBe(30);
      limitSource.tenant('acme', { INGEST: { override: { ratePerSecond: 7 } } });
      clock.ms += 31_000;
      expect(governor.admit(request()).limit).toBe(30); // stale while the refresh runs
      await governor.loadsSettled();
      expect(governor.admit(request())).toMatchObject({ limit: 7, source: 'TENANT_OVERRIDE' });
    } finally {
      await governor.close();
    }
  });

  it('meters at changed platform defaults from the first admit after they land', async () => {
    const clock = { ms: T0 };
    const limitSource = source();
    const request = () => ({ tenant: 'acme', dimension: 'EGRESS' as const, allowance: 'DETECTION' as const, units: 1, at: clock.ms });
    // The tenant is read 20 s after the platform defaults, so they fall due first and alone.
    const governor = await vouched(limitSource, request, clock, 20_000);
    try {
      expect(governor.admit(request()).source).toBe('SHIPPED_DEFAULT');
      limitSource.platformDefaults = { EGRESS: { ratePerSecond: 9 } };
      clock.ms += 11_000;
      governor.admit(request());
      await governor.loadsSettled();
      expect(governor.admit(request())).toMatchObject({ limit: 9, source: 'PLATFORM_DEFAULT' });
    } finally {
      await governor.close();
    }
  });
});
