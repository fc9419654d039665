import { describe, expect, it } from 'vitest';
import { fanOutRecorder } from '../../../src/governance/index.ts';
import type { AdmissionSummary } from '../../../src/governance/index.ts';
import { CollectingRecorder } from './memoryLimitSource.ts';

const entry: AdmissionSummary = {
  tenantId: 'acme',
  dimension: 'INGEST',
  allowance: 'LIVE',
  fromSecond: 1,
  seconds: 1,
  admittedUnits: 5,
  admittedMessages: 1,
  shedUnits: 0,
  shedMessages: 0,
  rejectedUnits: 0,
  rejectedMessages: 0,
  hitSeconds: 0,
};

describe('fanOutRecorder', () => {
  it('hands each batch to every recorder', async () => {
    const ledger = new CollectingRecorder();
    const metrics = new CollectingRecorder();
    await fanOutRecorder(ledger, metrics).record([entry], []);
    expect(ledger.admissions).toEqual([entry]);
    expect(metrics.admissions).toEqual([entry]);
  });

  it('fails the batch only when the primary fails; a secondary failure is a warning', async () => {
    const ledger = new CollectingRecorder();
    const metrics = new CollectingRecorder();
    metrics.failNext = 1;
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      await fanOutRecorder(ledger, metrics).record([entry], []);
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      expect(warnings.map((warning) => warning.message)).toEqual(['ledger unavailable']);
      ledger.failNext = 1;
      await expect(fanOutRecorder(ledger, metrics).record([entry], [])).rejects.toThrow('ledger unavailable');
    } finally {
      process.off('warning', onWarning);
    }
  });
});
