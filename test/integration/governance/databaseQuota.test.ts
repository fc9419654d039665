// A daily quota counted across two replicas in the database, without Redis (src/quotas/databaseQuotaBudget.ts):
// a tenant with a daily INGEST quota of 1,000 readings is admitted 1,000 and refused at the 1,001st whichever
// replica it reaches, and the bound the slices leave (quotaMeter.ts) holds when one replica took most of the day.
// Mirrors sharedQuota.test.ts (the same over Redis). On PostgreSQL each replica has its own pool on one schema.
import { afterEach, expect, it } from 'vitest';
import type { Db } from '../../../src/db/index.ts';
import { Governor } from '../../../src/governance/index.ts';
import type { QuotaThresholdCrossing } from '../../../src/governance/index.ts';
import { createDatabaseQuotaBudget } from '../../../src/quotas/index.ts';
import { describeOnEachStorage, type TestDb } from '../../support/databases.ts';
import { MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';

const closers: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function replica(db: Db, crossings: QuotaThresholdCrossing[]) {
  const source = new MemoryLimitSource().tenant('acme', {
    INGEST: { override: { ratePerSecond: 100_000, burst: 100_000, quota: { period: 'DAY', limit: 1000, timeZone: 'Europe/Berlin' } } },
  });
  const errors: unknown[] = [];
  const governor = new Governor({
    limitSource: source,
    quotaBudget: createDatabaseQuotaBudget(db, { onError: (error) => errors.push(error) }),
    onQuotaThreshold: (crossing) => crossings.push(crossing),
    onError: (error) => errors.push(error),
  });
  closers.push(() => governor.close());
  governor.learnLimits(source.records.values(), {});
  return { governor, errors };
}

const reading = (at: number) => ({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at }) as const;

describeOnEachStorage('a daily quota counted in the database without Redis ($name)', (target) => {
  async function twoReplicas(crossings: QuotaThresholdCrossing[]) {
    const opened: TestDb = await target.open({ max: 2 });
    closers.push(() => opened.dispose());
    const second = opened.connectAgain?.({ max: 2 }) ?? opened.db;
    return [replica(opened.db, crossings), replica(second, crossings)];
  }

  it('admits 1,000 readings across two replicas and refuses the 1,001st on either', async () => {
    const crossings: QuotaThresholdCrossing[] = [];
    const replicas = await twoReplicas(crossings);
    const at = Date.now();
    let admitted = 0;
    for (let i = 0; i < 1000; i++) {
      const { governor } = replicas[i % 2]!;
      const decision = governor.decide(reading(at));
      if (decision.admitted) admitted++;
      else throw new Error(`reading ${i + 1} refused: ${JSON.stringify(decision)}`);
      // Live traffic gives the answers time to come back between readings; so does this.
      await governor.reservationsSettled();
    }
    expect(admitted).toBe(1000);
    for (const { governor } of replicas) {
      const refused = governor.admit(reading(at));
      expect(refused).toMatchObject({ admitted: false, behaviour: 'REJECT', quotaExceeded: true, limit: 1000 });
      expect(refused.retryAfterSeconds).toBeGreaterThan(0);
      expect(refused.retryAfterSeconds).toBeLessThanOrEqual(25 * 3600);
    }
    expect(new Set(crossings.map((each) => each.thresholdPercent))).toEqual(new Set([50, 80, 100]));
    expect(replicas.flatMap((each) => each.errors)).toEqual([]);
  });

  it('holds the bound when one replica takes most of the day: never above the quota, at most one slice below', async () => {
    const replicas = await twoReplicas([]);
    const at = Date.now();
    let admitted = 0;
    for (let i = 0; i < 700; i++) {
      if (replicas[0]!.governor.decide(reading(at)).admitted) admitted++;
      await replicas[0]!.governor.reservationsSettled();
    }
    expect(admitted).toBe(700);
    for (let i = 0; i < 400; i++) {
      if (replicas[1]!.governor.decide(reading(at)).admitted) admitted++;
      await replicas[1]!.governor.reservationsSettled();
    }
    // What replica 0 still holds is at most one slice: ceil(1000 / 100).
    expect(admitted).toBeLessThanOrEqual(1000);
    expect(admitted).toBeGreaterThanOrEqual(990);
  });
});
