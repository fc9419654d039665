// A flush arms the cell of an allowance active in the second it closed for the second after, so that admit's
// fast path counts that second from its first admission on (tallies.ts, collect). It must be invisible: a
// Governor with the fast path and one without, fed the same admissions, clock steps and flushes (of everything,
// as close() does, or of closed seconds only, as the timer's tick does), record the same summaries at every
// flush, and every decision is in them.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Governor } from '../../../src/governance/index.ts';
import { CollectingRecorder, MemoryLimitSource } from './memoryLimitSource.ts';

const T0 = 1_800_000_000_000;
const TENANTS = ['acme', 'globex'] as const;

type Step =
  | { kind: 'admit'; tenant: number; units: number; late: number; repeat: number }
  | { kind: 'clock'; ms: number }
  | { kind: 'flush'; whole: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('admit' as const),
      tenant: fc.nat(TENANTS.length - 1),
      units: fc.integer({ min: 0, max: 12 }),
      late: fc.constantFrom(0, 0, 0, -1000, -1, 999, 1000, 2500),
      repeat: fc.integer({ min: 1, max: 20 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('clock' as const), ms: fc.constantFrom(1, 250, 999, 1000, 1001, 3000) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('flush' as const), whole: fc.boolean() }) },
);

/** The Governor's own collection of closed seconds only, as its timer's tick makes it. */
function flushClosedSeconds(governor: Governor): Promise<void> {
  return (governor as unknown as { tallies: { record(includeCurrentSecond: boolean): Promise<void> } }).tallies.record(false);
}

const byKey = (rows: readonly object[]) => rows.map((row) => JSON.stringify(row)).sort();

describe('Tallies: an armed cell', () => {
  // The flush timer never fires on its own: each Governor collects exactly when a step says so, both at the same
  // point of the calls (the timer's tick is the 'flush' step with whole: false).
  beforeAll(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] }));
  afterAll(() => vi.useRealTimers());

  it('counts exactly what the full path counts, flush after flush', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 50 }), fc.constantFrom(1000, 3000), async (steps, flushIntervalMs) => {
        let clock = T0;
        const recorders = [new CollectingRecorder(), new CollectingRecorder()];
        const governors = [true, false].map(
          (fastPath, i) =>
            new Governor({
              limitSource: new MemoryLimitSource().tenant('acme', { INGEST: { tier: { ratePerSecond: 30, burst: 45 } } }).tenant('globex', {}),
              recorder: recorders[i]!,
              now: () => clock,
              clockReadEveryAdmits: 1,
              flushIntervalMs,
              fastPath,
            }),
        );
        const [fast, full] = governors as [Governor, Governor];
        let calls = 0;
        try {
          for (const governor of governors) for (const tenant of TENANTS) governor.admit({ tenant, dimension: 'INGEST', allowance: 'LIVE', units: 0, at: clock });
          calls += TENANTS.length;
          await Promise.all(governors.map((governor) => governor.loadsSettled()));
          for (const each of steps) {
            if (each.kind === 'admit') {
              const request = { tenant: TENANTS[each.tenant]!, dimension: 'INGEST' as const, allowance: 'LIVE' as const, units: each.units, at: clock + each.late };
              for (let i = 0; i < each.repeat; i++) expect(fast.admit(request)).toEqual(full.admit(request));
              calls += each.repeat;
            } else if (each.kind === 'clock') clock += each.ms;
            else {
              for (const governor of governors) await (each.whole ? governor.flush() : flushClosedSeconds(governor));
              expect(byKey(recorders[0]!.admissions)).toEqual(byKey(recorders[1]!.admissions));
            }
          }
        } finally {
          await Promise.all(governors.map((governor) => governor.close()));
        }
        expect(byKey(recorders[0]!.admissions)).toEqual(byKey(recorders[1]!.admissions));
        // Every decision is in the summaries: one message a readings charge, admitted or shed.
        expect(recorders[0]!.total('admittedMessages') + recorders[0]!.total('shedMessages') + recorders[0]!.total('rejectedMessages')).toBe(calls);
      }),
      { numRuns: 500 },
    );
  });
});
