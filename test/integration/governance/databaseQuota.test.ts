// A daily quota counted across two replicas in the database, without Redis (src/quotas/databaseQuotaBudget.ts):
// a tenant with a daily INGEST quota of 1,000 readings is admitted 1,000 and refused at the 1,001st whichever
// replica it reaches, and the bound the slices leave (quotaMeter.ts) holds when one replica took most of the day.
// Mirrors sharedQuota.test.ts (the same over Redis). On PostgreSQL each replica has its own pool on one schema.
// Never past the quota, with one replica too (issue 33: a service without Redis admitted 14 readings of a daily
// quota of 10): a replica started again on a spent day, a first message of more readings than the quota, and a
// burst of requests before any answer admit nothing on credit; a held charge not admitted in the end (a wrong
// key, a failed sink) gives its units back; the next period's first slice is asked for in the last minute of the
// current one, so its first request does not wait.
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

function replica(db: Db, crossings: QuotaThresholdCrossing[], quota: { limit: number; timeZone: string } = { limit: 1000, timeZone: 'Europe/Berlin' }) {
  const source = new MemoryLimitSource().tenant('acme', {
    INGEST: { override: { ratePerSecond: 100_000, burst: 100_000, quota: { period: 'DAY', ...quota } } },
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
    const replicas = [replica(opened.db, crossings), replica(second, crossings)];
    // Each asked for its first slice when it learned the quota, as the service does at start.
    for (const { governor } of replicas) await governor.reservationsSettled();
    return replicas;
  }

  async function oneDatabase(): Promise<Db> {
    const opened: TestDb = await target.open({ max: 2 });
    closers.push(() => opened.dispose());
    return opened.db;
  }

  /** Admits `units` at `at` (settling the reservation each asks for, as live traffic's pace does): units admitted. */
  async function admitSettled(governor: Governor, units: number, at: number, times: number): Promise<number> {
    let admitted = 0;
    for (let i = 0; i < times; i++) {
      if (governor.decide({ ...reading(at), units }).admitted) admitted += units;
      await governor.reservationsSettled();
    }
    return admitted;
  }

  it('a replica started again on a spent day admits nothing more, before or after its first answer', async () => {
    const db = await oneDatabase();
    const quota = { limit: 10, timeZone: 'UTC' };
    const first = replica(db, [], quota);
    await first.governor.reservationsSettled();
    const at = Date.now();
    expect(await admitSettled(first.governor, 1, at, 15)).toBe(10);
    // The process ends and starts again: a new Governor on the same count. Its first request comes before the
    // answer to the slice it asked for on learning the quota: refused to wait, not admitted on credit.
    await first.governor.close();
    const again = replica(db, [], quota);
    const early = again.governor.decide(reading(at));
    expect(early).toMatchObject({ admitted: false, quotaExceeded: true, retryAfterSeconds: 1 });
    await again.governor.reservationsSettled();
    const spent = again.governor.admit(reading(at));
    expect(spent).toMatchObject({ admitted: false, quotaExceeded: true, limit: 10 });
    expect(spent.retryAfterSeconds).toBeGreaterThan(1);
    const { rows } = await db.query<{ used: string }>('SELECT used::text AS used FROM gl_quota_usage');
    expect(rows).toEqual([{ used: '10' }]);
    expect([...first.errors, ...again.errors]).toEqual([]);
  });

  it('never admits a first message of more readings than the quota, nor a burst sent before any answer', async () => {
    const db = await oneDatabase();
    const quota = { limit: 10, timeZone: 'UTC' };
    const { governor, errors } = replica(db, [], quota);
    const at = Date.now();
    // Before its first answer: 14 readings in one message, then a burst of single readings in one turn.
    expect(governor.decide({ ...reading(at), units: 14 })).toMatchObject({ admitted: false, quotaExceeded: true });
    let admitted = 0;
    for (let i = 0; i < 20; i++) if (governor.decide(reading(at)).admitted) admitted++;
    await governor.reservationsSettled();
    // Messages of 4 readings: two fit, the third would pass the quota (a message is all or nothing).
    admitted += await admitSettled(governor, 4, at, 4);
    admitted += await admitSettled(governor, 1, at, 5);
    expect(admitted).toBe(10);
    expect(governor.decide({ ...reading(at), units: 14 })).toMatchObject({ admitted: false, quotaExceeded: true });
    const { rows } = await db.query<{ used: string }>('SELECT used::text AS used FROM gl_quota_usage');
    expect(rows).toEqual([{ used: '10' }]);
    expect(errors).toEqual([]);
  });

  it('a held charge settled as anything but admitted gives its units back to the quota', async () => {
    const db = await oneDatabase();
    const { governor, errors } = replica(db, [], { limit: 10, timeZone: 'UTC' });
    await governor.reservationsSettled();
    const at = Date.now();
    // A wrong key (401), a sink that failed (503) and content the sink refused: none of them spends the quota.
    for (const outcome of ['unauthenticated', 'withdrawn', 'rejected'] as const) {
      for (let i = 0; i < 5; i++) {
        const charge = governor.chargeUntilSettled({ ...reading(at), units: 2 });
        await governor.reservationsSettled();
        if (charge.decision.admitted) charge.settle(outcome);
      }
    }
    let admitted = 0;
    for (let i = 0; i < 15; i++) {
      const charge = governor.chargeUntilSettled(reading(at));
      if (charge.decision.admitted) {
        charge.settle('admitted');
        admitted++;
      }
      await governor.reservationsSettled();
    }
    expect(admitted).toBe(10);
    expect(errors).toEqual([]);
  });

  it("asks for the next day's first slice in the last minute of the day: its first request is admitted at once", async () => {
    const db = await oneDatabase();
    const { governor, errors } = replica(db, [], { limit: 10, timeZone: 'UTC' });
    await governor.reservationsSettled();
    const midnight = Math.ceil(Date.now() / 86_400_000) * 86_400_000;
    expect(governor.decide(reading(midnight - 30_000)).admitted).toBe(true);
    await governor.reservationsSettled();
    expect(governor.decide(reading(midnight)).admitted).toBe(true);
    const { rows } = await db.query<{ start: string; used: string }>(
      `SELECT to_char(period_start AT TIME ZONE 'UTC', 'HH24:MI') AS start, used::text AS used FROM gl_quota_usage ORDER BY period_start`,
    );
    expect(rows.map((row) => row.start)).toEqual(['00:00', '00:00']);
    expect(errors).toEqual([]);
  });

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
