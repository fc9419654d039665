// A Recorder that lets go of a batch's summaries (Recorder.released) gets the same objects back, made into
// later batches' summaries: fewer new objects for the garbage collector (src/governance/tallies.ts,
// SpareSummaries). What every Recorder sees must not change: each batch's counts are its own, a batch the
// Recorder failed to take keeps its summaries until it is taken, and the metrics recorder (which remembers
// the summaries it saw, to count a retried batch once) counts every unit once.
import { afterEach, describe, expect, it } from 'vitest';
import { fanOutRecorder, Governor } from '../../../src/governance/index.ts';
import type { AdmissionSummary, Recorder } from '../../../src/governance/index.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { createMetricsRecorder } from '../../../src/metrics/metricsRecorder.ts';
import { MemoryLimitSource } from './memoryLimitSource.ts';

const T0 = Date.UTC(2026, 11, 3, 12);

/** Keeps the objects it was given (and a copy of each as it was then), failing when told. */
class KeepingRecorder implements Recorder {
  readonly given: AdmissionSummary[][] = [];
  readonly copies: AdmissionSummary[][] = [];
  failNext = 0;
  releasedBatches = 0;

  constructor(private readonly letsGo: boolean) {
    // Without a `released` of its own the Governor must treat it as keeping what it was given.
    if (!letsGo) this.released = undefined;
  }

  async record(admissions: readonly AdmissionSummary[]): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('ledger unavailable');
    }
    this.given.push([...admissions]);
    this.copies.push(admissions.map((each) => ({ ...each })));
  }

  released?(admissions: readonly AdmissionSummary[]): void {
    expect(this.letsGo).toBe(true);
    expect(admissions.length).toBeGreaterThan(0);
    this.releasedBatches++;
  }
}

let governors: Governor[] = [];
afterEach(async () => {
  await Promise.allSettled(governors.map((each) => each.close()));
  governors = [];
});

async function governorWith(recorder: Recorder, clock: { ms: number }, tenants: readonly string[]): Promise<Governor> {
  const source = new MemoryLimitSource();
  for (const tenant of tenants) source.tenant(tenant, {});
  const governor = new Governor({ limitSource: source, recorder, now: () => clock.ms, clockReadEveryAdmits: 1, flushIntervalMs: 3_600_000, onError: () => {} });
  governors.push(governor);
  for (const tenant of tenants) governor.admit({ tenant, dimension: 'API_REQUESTS', units: 0, at: clock.ms });
  await governor.loadsSettled();
  await governor.flush();
  return governor;
}

describe('spare summaries', () => {
  it('makes a taken batch’s summaries into the next batch’s, each batch with its own counts', async () => {
    const clock = { ms: T0 };
    const recorder = new KeepingRecorder(true);
    const governor = await governorWith(recorder, clock, ['acme', 'globex', 'initech']);
    const before = recorder.given.length;
    for (let second = 1; second <= 3; second++) {
      clock.ms = T0 + second * 1000;
      // A different tenant set each second, and counts that differ by second.
      for (const tenant of second === 2 ? ['globex', 'initech'] : ['acme', 'globex', 'initech']) {
        governor.admit({ tenant, dimension: 'API_REQUESTS', units: second * 10, at: clock.ms });
      }
      await governor.flush();
    }
    const [first, second, third] = recorder.given.slice(before);
    // The second batch's summaries are objects of the first's, the third's of the second's (and one new).
    expect(second!.every((entry) => first!.includes(entry))).toBe(true);
    expect(third!.filter((entry) => first!.includes(entry)).length).toBeGreaterThanOrEqual(2);
    expect(recorder.releasedBatches).toBeGreaterThanOrEqual(3);
    // What each batch carried when it was handed over is what was counted in its second.
    const counts = recorder.copies.slice(before).map((batch) => batch.map((each) => [each.tenantId, each.fromSecond - T0 / 1000, each.admittedUnits + each.shedUnits]).sort());
    expect(counts).toEqual([
      [['acme', 1, 10], ['globex', 1, 10], ['initech', 1, 10]],
      [['globex', 2, 20], ['initech', 2, 20]],
      [['acme', 3, 30], ['globex', 3, 30], ['initech', 3, 30]],
    ]);
  });

  it('makes new summaries for a Recorder that does not let go of them', async () => {
    const clock = { ms: T0 };
    const recorder = new KeepingRecorder(false);
    const governor = await governorWith(recorder, clock, ['acme']);
    const before = recorder.given.length;
    for (let second = 1; second <= 2; second++) {
      clock.ms = T0 + second * 1000;
      governor.admit({ tenant: 'acme', dimension: 'API_REQUESTS', units: 1, at: clock.ms });
      await governor.flush();
    }
    const [first, second] = recorder.given.slice(before);
    expect(second![0]).not.toBe(first![0]);
    expect(first![0]!.fromSecond).toBe(T0 / 1000 + 1);
  });

  it('keeps a batch the Recorder failed to take as it was until it is taken', async () => {
    const clock = { ms: T0 };
    const recorder = new KeepingRecorder(true);
    const governor = await governorWith(recorder, clock, ['acme', 'globex']);
    const before = recorder.given.length;
    clock.ms = T0 + 1000;
    governor.admit({ tenant: 'acme', dimension: 'API_REQUESTS', units: 1, at: clock.ms });
    recorder.failNext = 1;
    await expect(governor.flush()).rejects.toThrow('ledger unavailable');
    clock.ms = T0 + 2000;
    governor.admit({ tenant: 'globex', dimension: 'API_REQUESTS', units: 2, at: clock.ms });
    await governor.flush();
    // The refused batch first (acme's second 1), then the new one (globex's second 2): neither made from the other.
    const [retried, next] = recorder.copies.slice(before);
    expect(retried!.map((each) => [each.tenantId, each.fromSecond - T0 / 1000, each.admittedUnits])).toEqual([['acme', 1, 1]]);
    expect(next!.map((each) => [each.tenantId, each.fromSecond - T0 / 1000, each.admittedUnits])).toEqual([['globex', 2, 2]]);
  });

  it('lets the metrics recorder count every unit once when summaries are made again, through a failed batch', async () => {
    const metrics = createMetrics({ service: 'governance', processMetrics: false });
    let ledgerDown = false;
    let ledgerUnits = 0;
    const ledger: Recorder = {
      async record(admissions) {
        if (ledgerDown) throw new Error('ledger unreachable');
        ledgerUnits += admissions.reduce((sum, entry) => sum + entry.admittedUnits, 0);
      },
      released() {},
    };
    const recorder = fanOutRecorder(ledger, createMetricsRecorder(metrics));
    expect(recorder.released).toBeDefined();
    const clock = { ms: T0 };
    const governor = await governorWith(recorder, clock, ['acme']);
    ledgerUnits = 0;
    let units = 0;
    for (let second = 1; second <= 6; second++) {
      clock.ms = T0 + second * 1000;
      ledgerDown = second === 3;
      for (let i = 0; i < second; i++) if (governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: clock.ms }).admitted) units++;
      await governor.flush().catch(() => {});
    }
    expect(units).toBeGreaterThan(10);
    expect(ledgerUnits).toBe(units);
    const text = await metrics.render();
    expect(text).toContain(`devicechain_governance_governance_admitted_units_total{dimension="INGEST",allowance="LIVE",tenant="acme"} ${units}`);
  });

  it('is not offered by a fan-out when one of its recorders keeps the summaries', () => {
    const keeps: Recorder = { record: async () => {} };
    const letsGo: Recorder = { record: async () => {}, released() {} };
    expect(fanOutRecorder(letsGo, keeps).released).toBeUndefined();
    expect(fanOutRecorder(letsGo, letsGo).released).toBeDefined();
  });
});
