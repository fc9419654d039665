// A summary never spans more than the flush interval, whatever times the decisions carry (issue 34: a BACKLOG
// message dated `sent-at: 1` and one dated ten seconds ago were merged into one summary spanning 56 years).
// The Governor is driven with decisions at any time (decades back, years ahead, the same second again), a
// Recorder that fails when told, and flushes; every summary it hands over must lie within one window of the
// flush interval, and no count may be lost, also when the batch waiting for a failing Recorder is full and
// new windows are clamped into a key's latest one.
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Governor } from '../../../src/governance/index.ts';
import type { AdmissionSummary, AdmitRequest, UnresolvedAdmissionSummary } from '../../../src/governance/index.ts';
import { CollectingRecorder, MemoryLimitSource } from './memoryLimitSource.ts';

const T0 = 1_800_000_000_000;
const TENANTS = ['acme', 'globex', 'ghost'] as const;
const CALLS: Omit<AdmitRequest, 'tenant' | 'units' | 'at'>[] = [
  { dimension: 'INGEST', allowance: 'BACKLOG' },
  { dimension: 'INGEST', allowance: 'BACKLOG', charge: 'message' },
  { dimension: 'INGEST', allowance: 'LIVE' },
  { dimension: 'AI_INFERENCE' },
  { dimension: 'API_REQUESTS', callerKey: 'sdk-1' },
];

type Step =
  | { kind: 'admit'; tenant: number; call: number; units: number; atMs: number }
  | { kind: 'flush'; fail: boolean }
  | { kind: 'clock'; ms: number };

// Times a client may send: near the clock, and anywhere from 1970 to decades ahead.
const atMs = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -20_000, max: 20_000 }).map((offset) => T0 + offset) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 2 * T0 }) },
  { weight: 1, arbitrary: fc.constantFrom(1, T0 - 10_000, T0 - 7 * 86_400_000, T0 + 10 * 365 * 86_400_000) },
);

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('admit' as const),
      tenant: fc.nat(TENANTS.length - 1),
      call: fc.nat(CALLS.length - 1),
      units: fc.integer({ min: 0, max: 30 }),
      atMs,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('flush' as const), fail: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('clock' as const), ms: fc.integer({ min: 0, max: 5_000 }) }) },
);

function windowOf(summary: AdmissionSummary | UnresolvedAdmissionSummary, windowSeconds: number) {
  return { first: Math.floor(summary.fromSecond / windowSeconds), last: Math.floor((summary.fromSecond + summary.seconds - 1) / windowSeconds) };
}

let governors: Governor[] = [];
afterEach(async () => {
  await Promise.allSettled(governors.map((each) => each.close()));
  governors = [];
});

describe('summaries never span more than the flush interval', () => {
  it('holds for decisions at any time, a failing Recorder and a full batch, and loses no count (property)', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 80 }),
        fc.constantFrom(1_000, 2_500, 10_000),
        fc.constantFrom(2, 8, 500_000),
        async (steps, flushIntervalMs, maxPendingSummaries) => {
          runs++;
          let clock = T0;
          const recorder = new CollectingRecorder();
          const source = new MemoryLimitSource().tenant('acme', {}).tenant('globex', { INGEST: { override: { ratePerSecond: 5, burst: 5 } } });
          const governor = new Governor({ limitSource: source, recorder, now: () => clock, clockReadEveryAdmits: 1, flushIntervalMs, maxPendingSummaries });
          governors.push(governor);
          await governor.loadsSettled();
          let units = 0;
          let messages = 0;
          for (const each of steps) {
            if (each.kind === 'admit') {
              const call = CALLS[each.call]!;
              const decision = governor.admit({ ...call, tenant: TENANTS[each.tenant]!, units: call.charge === 'message' ? 1 : each.units, at: each.atMs });
              // A readings charge is tallied with its units; a message charge only when refused (one message, 0 units).
              if (call.charge !== 'message') {
                units += each.units;
                messages++;
              } else if (!decision.admitted) messages++;
              await governor.loadsSettled();
            } else if (each.kind === 'flush') {
              recorder.failNext = each.fail ? 1 : 0;
              await governor.flush().catch(() => {});
            } else clock += each.ms;
          }
          recorder.failNext = 0;
          await governor.close();
          const windowSeconds = Math.ceil(flushIntervalMs / 1000);
          for (const summary of [...recorder.admissions, ...recorder.unresolved]) {
            expect(summary.seconds).toBeGreaterThanOrEqual(1);
            expect(summary.seconds).toBeLessThanOrEqual(windowSeconds);
            const { first, last } = windowOf(summary, windowSeconds);
            expect(last).toBe(first);
          }
          const recorded = recorder.admissions.reduce((sum, each) => sum + each.admittedUnits + each.shedUnits + each.rejectedUnits, 0);
          const recordedMessages = recorder.admissions.reduce((sum, each) => sum + each.admittedMessages + each.shedMessages + each.rejectedMessages, 0);
          expect(recorded).toBe(units);
          expect(recordedMessages).toBe(messages);
          if (maxPendingSummaries > 1_000) expect(governor.stats().clampedTallies).toBe(0);
        },
      ),
      { numRuns: 400 },
    );
    console.log(`summary spans: ${runs} runs completed`);
    expect(runs).toBeGreaterThanOrEqual(400);
  });

  it('records the issue 34 reproduction as two one-second summaries, not one spanning 56 years', async () => {
    const recorder = new CollectingRecorder();
    const source = new MemoryLimitSource().tenant('acme', {});
    const clock = T0;
    const governor = new Governor({ limitSource: source, recorder, now: () => clock });
    governors.push(governor);
    await governor.loadsSettled();
    // What the MQTT door did before send times were held to a window: both messages on BACKLOG at their send times.
    governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'BACKLOG', units: 1, at: 1 });
    governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'BACKLOG', units: 1, at: clock - 10_000 });
    await governor.flush();
    expect(recorder.admissions.map((each) => [each.fromSecond, each.seconds, each.admittedUnits])).toEqual([
      [0, 1, 1],
      [T0 / 1000 - 10, 1, 1],
    ]);
  });

  it('keeps the batch bounded through a long Recorder outage, clamping new windows into each key’s latest one', async () => {
    const recorder = new CollectingRecorder();
    const source = new MemoryLimitSource().tenant('acme', {}).tenant('globex', {});
    let clock = T0;
    const governor = new Governor({ limitSource: source, recorder, now: () => clock, clockReadEveryAdmits: 1, maxPendingSummaries: 10 });
    governors.push(governor);
    await governor.loadsSettled();
    recorder.failNext = 1_000;
    for (let second = 0; second < 60; second++) {
      clock = T0 + second * 1000;
      governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 2, at: clock });
      governor.admit({ tenant: 'globex', dimension: 'INGEST', allowance: 'LIVE', units: 3, at: clock });
      await governor.flush().catch(() => {});
    }
    // The ledger comes back: one batch offered again, then everything counted meanwhile.
    recorder.failNext = 0;
    await governor.flush();
    expect(recorder.admissions.length).toBeLessThanOrEqual(1 + 10 + 2);
    expect(recorder.total('admittedUnits', 'acme')).toBe(120);
    expect(recorder.total('admittedUnits', 'globex')).toBe(180);
    for (const summary of recorder.admissions) expect(summary.seconds).toBe(1);
    expect(governor.stats().clampedTallies).toBeGreaterThan(0);
  });
});
