import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { createMetricsRecorder } from '../../../src/metrics/metricsRecorder.ts';
import { SpaceSavingSketch } from '../../../src/metrics/spaceSaving.ts';
import type { AdmissionSummary } from '../../../src/governance/index.ts';

function admission(tenantId: string, admittedUnits: number, shedUnits = 0): AdmissionSummary {
  return {
    tenantId,
    dimension: 'INGEST',
    allowance: 'LIVE',
    fromSecond: 1_000,
    seconds: 1,
    admittedUnits,
    admittedMessages: 1,
    shedUnits,
    shedMessages: shedUnits > 0 ? 1 : 0,
    rejectedUnits: 0,
    rejectedMessages: 0,
    hitSeconds: shedUnits > 0 ? 1 : 0,
  };
}

function seriesWithTenant(text: string): string[] {
  return text.split('\n').filter((line) => line.startsWith('devicechain_governance_governance_') && line.includes('tenant="'));
}

describe('bounded tenant labels', () => {
  it('keeps the series count bounded with 100,000 tenants, names the busiest and counts the rest as other', async () => {
    let clock = 0;
    const metrics = createMetrics({ service: 'governance', namedTenants: 20, processMetrics: false, tenantLabels: { now: () => clock } });
    const recorder = createMetricsRecorder(metrics);
    const heavy = Array.from({ length: 5 }, (_, i) => `heavy-${i}`);
    for (let round = 0; round < 10; round++) {
      const batch: AdmissionSummary[] = [];
      for (let i = 0; i < 10_000; i++) batch.push(admission(`tenant-${round * 10_000 + i}`, 1));
      for (const tenant of heavy) batch.push(admission(tenant, 5_000, 100));
      await recorder.record(batch, []);
      clock += 60_000;
    }
    const text = await metrics.render();
    const series = seriesWithTenant(text);
    // admitted, shed and hit seconds for at most 20 named tenants plus "_other".
    expect(series.length).toBeLessThanOrEqual(3 * 21);
    for (const tenant of heavy) expect(text).toContain(`devicechain_governance_governance_shed_units_total{dimension="INGEST",allowance="LIVE",tenant="${tenant}"}`);
    expect(text).toMatch(/admitted_units_total\{dimension="INGEST",allowance="LIVE",tenant="_other"\} \d+/);
    expect(metrics.tenants.named().length).toBeLessThanOrEqual(20);
    // The first batch filled the free names with the first tenants seen; from the first re-choice on,
    // the heavy tenants hold names.
    expect(text).toContain('admitted_units_total{dimension="INGEST",allowance="LIVE",tenant="heavy-0"} 45000');
  });

  it('removes the series of a tenant that lost its name; its units count as other from then on', async () => {
    let clock = 0;
    const metrics = createMetrics({ service: 'governance', namedTenants: 1, processMetrics: false, tenantLabels: { now: () => clock } });
    const recorder = createMetricsRecorder(metrics);
    await recorder.record([admission('early', 10)], []);
    expect(await metrics.render()).toContain('tenant="early"');
    clock += 60_000;
    await recorder.record([admission('busy', 1_000_000), admission('early', 10)], []);
    const text = await metrics.render();
    expect(text).not.toContain('tenant="early"');
    expect(text).toContain('tenant="busy"} 1000000');
    expect(text).toContain('tenant="_other"} 10');
  });

  it('keeps a real tenant named "other" apart from the roll-up of unnamed tenants', async () => {
    const metrics = createMetrics({ service: 'governance', namedTenants: 1, processMetrics: false });
    const recorder = createMetricsRecorder(metrics);
    await recorder.record([admission('other', 7), admission('quiet', 3)], []);
    const text = await metrics.render();
    expect(text).toContain('admitted_units_total{dimension="INGEST",allowance="LIVE",tenant="other"} 7');
    expect(text).toContain('admitted_units_total{dimension="INGEST",allowance="LIVE",tenant="_other"} 3');
  });
});

describe('SpaceSavingSketch', () => {
  it('never misses an item heavier than total / capacity, in fixed memory', () => {
    const sketch = new SpaceSavingSketch(10);
    for (let i = 0; i < 50_000; i++) {
      sketch.add(`noise-${i}`, 1);
      if (i % 100 === 0) sketch.add('heavy', 50);
    }
    expect(sketch.size).toBe(10);
    expect(sketch.top(1)).toEqual(['heavy']);
  });
});
