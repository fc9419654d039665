// The Governor keeps a batch the ledger refused and hands the same summaries again, grown, at the next
// flush; fanOutRecorder hands every attempt to the metrics recorder too. Each unit is counted once.
import { describe, expect, it } from 'vitest';
import { fanOutRecorder, Governor } from '../../../src/governance/index.ts';
import type { Recorder } from '../../../src/governance/index.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { createMetricsRecorder } from '../../../src/metrics/metricsRecorder.ts';
import { MemoryLimitSource } from '../governance/memoryLimitSource.ts';

describe('metrics across a ledger outage', () => {
  it('counts every admitted unit exactly once while the ledger refuses batches and after it recovers', async () => {
    const metrics = createMetrics({ service: 'governance', processMetrics: false });
    let ledgerDown = true;
    let ledgerUnits = 0;
    const ledger: Recorder = {
      async record(admissions) {
        if (ledgerDown) throw new Error('ledger unreachable');
        ledgerUnits += admissions.reduce((sum, entry) => sum + entry.admittedUnits, 0);
      },
    };
    const clock = Date.UTC(2026, 10, 29, 12);
    const governor = new Governor({
      limitSource: new MemoryLimitSource().tenant('acme', {}),
      recorder: fanOutRecorder(ledger, createMetricsRecorder(metrics)),
      now: () => clock,
      flushIntervalMs: 3_600_000,
      onError: () => {},
    });
    try {
      const admitted = (units: number) => governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units, at: clock }).admitted;
      // The first admission of a tenant is metered at the platform default while its ceilings load.
      let units = admitted(1) ? 1 : 0;
      await governor.loadsSettled();
      for (let flush = 0; flush < 3; flush++) {
        for (let i = 0; i < 5; i++) if (admitted(10)) units += 10;
        await expect(governor.flush()).rejects.toThrow('ledger unreachable');
      }
      ledgerDown = false;
      for (let i = 0; i < 5; i++) if (admitted(10)) units += 10;
      await governor.flush();
      const text = await metrics.render();
      expect(ledgerUnits).toBe(units);
      expect(text).toContain(`devicechain_governance_governance_admitted_units_total{dimension="INGEST",allowance="LIVE",tenant="acme"} ${units}`);
    } finally {
      await governor.close().catch(() => {});
    }
  });
});
