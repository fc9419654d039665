// 1,000,000 invented tenant names on the HTTP allowance: the Governor's state stays bounded by
// confirmed + 1024 unconfirmed places + 1 overflow allowance, and the heap does not grow with the names.
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { Governor } from '../../../src/governance/index.ts';
import { CollectingRecorder, MemoryLimitSource } from './memoryLimitSource.ts';

const NAMES = 1_000_000;
const CONFIRMED = 200;

describe('unconfirmed names', () => {
  const source = new MemoryLimitSource();
  for (let i = 0; i < CONFIRMED; i++) source.tenant(`customer-${i}`, {});
  const governor = new Governor({ limitSource: source, recorder: new CollectingRecorder() });
  afterAll(() => governor.close());

  it('keeps state within confirmed + 1024 + 1 over a million invented names', async () => {
    for (let i = 0; i < CONFIRMED; i++) governor.confirmTenant(`customer-${i}`);
    const heapBefore = heapUsed();
    let maxStates = 0;
    let overflowed = 0;
    const at = Date.now();
    for (let i = 0; i < NAMES; i++) {
      const decision = governor.admit({ tenant: `invented-${i}`, dimension: 'INGEST', allowance: 'HTTP', units: 1, at });
      if (decision.scope === 'overflow') overflowed++;
      if ((i & 0x3fff) === 0) {
        maxStates = Math.max(maxStates, governor.stats().tenantStates);
        // Let background reads of the names that did get a place complete, as they would in service.
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (i % 100 === 0) governor.admit({ tenant: `customer-${i % CONFIRMED}`, dimension: 'INGEST', allowance: 'HTTP', units: 1, at });
    }
    await governor.loadsSettled();
    await governor.flush();
    const stats = governor.stats();
    maxStates = Math.max(maxStates, stats.tenantStates);
    const heapGrowthMb = (heapUsed() - heapBefore) / 1024 / 1024;
    console.log(
      `1,000,000 invented names: at most ${maxStates} tenant states (+1 overflow allowance), ` +
        `${overflowed} admissions on the overflow allowance, heap growth ${heapGrowthMb.toFixed(1)} MB`,
    );
    expect(maxStates).toBeLessThanOrEqual(CONFIRMED + 1024);
    expect(stats).toMatchObject({ confirmedTenants: CONFIRMED, unconfirmedNames: 1024, overflowInUse: true });
    expect(overflowed).toBe(NAMES - 1024);
    expect(heapGrowthMb).toBeLessThan(16);
  });
});

// A full collection before each reading, so the growth is what the Governor retains, not garbage.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

function heapUsed(): number {
  collectGarbage();
  return process.memoryUsage().heapUsed;
}
