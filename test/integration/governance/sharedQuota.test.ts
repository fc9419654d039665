// A daily quota counted across two replicas through the machine's real Redis: a tenant with a daily INGEST quota
// of 1,000 readings is admitted 1,000 and refused at the 1,001st whichever replica it reaches, and the bound the
// slices leave (quotaMeter.ts) holds when one replica took most of the day.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Governor, loadRedisSharedBudget } from '../../../src/governance/index.ts';
import type { QuotaThresholdCrossing } from '../../../src/governance/index.ts';
import { MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';

const { createRedisSharedBudget } = await loadRedisSharedBudget();

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) console.warn('REDIS_URL is not set: the shared quota suite against Redis is skipped.');

const closers: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function replica(keyPrefix: string, crossings: QuotaThresholdCrossing[]) {
  const source = new MemoryLimitSource().tenant('acme', {
    INGEST: { override: { ratePerSecond: 100_000, burst: 100_000, quota: { period: 'DAY', limit: 1000, timeZone: 'Europe/Berlin' } } },
  });
  const budget = createRedisSharedBudget({ url: redisUrl!, keyPrefix });
  expect(await budget.ready()).toBe(true);
  const governor = new Governor({ limitSource: source, sharedBudget: budget, onQuotaThreshold: (crossing) => crossings.push(crossing) });
  closers.push(() => budget.close(), () => governor.close());
  governor.learnLimits(source.records.values(), {});
  // It asked for its first slice when it learned the quota, as the service does at start.
  await governor.reservationsSettled();
  return governor;
}

const reading = (at: number) => ({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at }) as const;

describe.skipIf(!redisUrl)('a daily quota shared on Redis', () => {
  it('admits 1,000 readings across two replicas and refuses the 1,001st on either', async () => {
    const keyPrefix = `gl-test:${randomBytes(6).toString('hex')}:`;
    const crossings: QuotaThresholdCrossing[] = [];
    const replicas = [await replica(keyPrefix, crossings), await replica(keyPrefix, crossings)];
    const at = Date.now();
    let admitted = 0;
    for (let i = 0; i < 1000; i++) {
      const decision = replicas[i % 2]!.decide(reading(at));
      if (decision.admitted) admitted++;
      else throw new Error(`reading ${i + 1} refused: ${JSON.stringify(decision)}`);
      // Live traffic gives the answers time to come back between readings; so does this.
      await replicas[i % 2]!.reservationsSettled();
    }
    expect(admitted).toBe(1000);
    for (const governor of replicas) {
      const refused = governor.admit(reading(at));
      expect(refused).toMatchObject({ admitted: false, behaviour: 'REJECT', quotaExceeded: true, limit: 1000 });
      expect(refused.retryAfterSeconds).toBeGreaterThan(0);
      expect(refused.retryAfterSeconds).toBeLessThanOrEqual(25 * 3600);
    }
    // Each threshold is noticed (by one replica or both: the ledger keeps one of each).
    expect(new Set(crossings.map((each) => each.thresholdPercent))).toEqual(new Set([50, 80, 100]));
    expect(crossings.every((each) => each.tenantId === 'acme' && each.limit === 1000)).toBe(true);
  });

  it('holds the bound when one replica takes most of the day: never above the quota, at most one slice below', async () => {
    const keyPrefix = `gl-test:${randomBytes(6).toString('hex')}:`;
    const replicas = [await replica(keyPrefix, []), await replica(keyPrefix, [])];
    const at = Date.now();
    let admitted = 0;
    for (let i = 0; i < 700; i++) {
      if (replicas[0]!.decide(reading(at)).admitted) admitted++;
      await replicas[0]!.reservationsSettled();
    }
    expect(admitted).toBe(700);
    for (let i = 0; i < 400; i++) {
      if (replicas[1]!.decide(reading(at)).admitted) admitted++;
      await replicas[1]!.reservationsSettled();
    }
    // What replica 0 still holds is at most one slice: ceil(1000 / 100).
    expect(admitted).toBeLessThanOrEqual(1000);
    expect(admitted).toBeGreaterThanOrEqual(990);
  });
});
