// What an active tenant costs the admitting thread's heap, in objects: every full collection marks each one
// again, and at 50,000 active tenants a mark-compact whose marking fell behind on two busy cores held the event
// loop 54.7 ms (bench/RESULTS.md). Tenants of one tier share their Ceilings and ResolvedLimits (limitCache.ts),
// an allowance holds a Tally only while closed seconds wait, and a fixed window's numbers live in the
// allowance's cell (fixedWindow.ts). Traffic as bench/scale.ts's: every tenant on the admission API (its fixed
// window), some also on the HTTP ingest allowance (a message charge and its readings), records read afresh
// each time as the database gives them, three seconds of traffic with the flushes between.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { Governor } from '../../../src/governance/index.ts';
import type { LimitSource, TenantGovernanceRecord } from '../../../src/governance/index.ts';
import { CollectingRecorder } from './memoryLimitSource.ts';

const TENANTS = 5_000;
const INGEST_EVERY = 10;
const WARM_UP_TENANTS = 2_000;
/** The promise: heap objects an active tenant adds, all it holds (its meter, allowances, strings, shared limits, the spare summary its next batch reuses): 15.0-15.1 measured, 49.6 before the sharing above. */
const MAX_OBJECTS_PER_TENANT = 20;

const freshRecords: LimitSource = {
  async loadTenants(ids) {
    return new Map(
      ids.map((id): [string, TenantGovernanceRecord] => [
        id,
        { tenantId: id, tierId: 'standard', levels: { API_REQUESTS: { tier: { ratePerSecond: 5 } }, INGEST: { tier: { ratePerSecond: 50, burst: 100 } } } },
      ]),
    );
  },
  async loadPlatformDefaults() {
    return {};
  },
};

describe('an active tenant on the heap', () => {
  it(`holds at most ${MAX_OBJECTS_PER_TENANT} heap objects`, async () => {
    // Released summaries are reused by the next batches, as the service's recorders let them be.
    const recorder = new CollectingRecorder();
    const governor = new Governor({ limitSource: freshRecords, recorder });
    const names = Array.from({ length: TENANTS }, (_, i) => `tenant-${i}`);
    const traffic = (tenants: readonly string[], at: number) => {
      tenants.forEach((tenant, i) => {
        if (i % INGEST_EVERY === 0) {
          governor.admit({ tenant, dimension: 'INGEST', allowance: 'HTTP', units: 1, at, charge: 'message' });
          governor.admit({ tenant, dimension: 'INGEST', allowance: 'HTTP', units: 3, at });
        }
        governor.admit({ tenant, dimension: 'API_REQUESTS', units: 1, at });
      });
    };
    const seconds = async (tenants: readonly string[]) => {
      for (let second = 0; second < 3; second++) {
        traffic(tenants, Date.now());
        await governor.loadsSettled();
        await governor.flush();
        recorder.admissions.length = 0;
      }
    };
    // Tenants of their own first, as many as it takes V8 to optimise the code these calls run, so what every
    // Governor makes once (its store, its code, optimised or not) is not counted: with 11 of them, the count
    // read 15.6-17.0 from run to run, the optimised code made while measuring counted or not.
    await seconds(names.slice(0, WARM_UP_TENANTS).map((name) => `warm-up-${name}`));
    const before = heapObjects();
    await seconds(names);
    const perTenant = (heapObjects() - before) / TENANTS;
    console.log(`an active tenant: ${perTenant.toFixed(1)} heap objects (${TENANTS} tenants, one in ${INGEST_EVERY} also on HTTP ingest)`);
    expect(governor.stats().tenantStates).toBeGreaterThanOrEqual(TENANTS);
    expect(perTenant).toBeLessThanOrEqual(MAX_OBJECTS_PER_TENANT);
    await governor.close();
  });
});

// A full collection first, so what is counted is what is held, not garbage.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

function heapObjects(): number {
  collectGarbage();
  const directory = mkdtempSync(join(tmpdir(), 'heap-'));
  try {
    const file = v8.writeHeapSnapshot(join(directory, 'active.heapsnapshot'));
    const snapshot = JSON.parse(readFileSync(file, 'utf8')) as { snapshot: { meta: { node_fields: string[] } }; nodes: number[] };
    return snapshot.nodes.length / snapshot.snapshot.meta.node_fields.length;
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}
