// Two Governors share ceilings through the machine's real Redis; when Redis is unreachable (a closed port, or
// a connection that dies mid-run) each meters alone at half the limit, without an exception, and returns to
// shared counting when Redis answers again. Every budget runs the production command timeout (250 ms): the
// tests wait for the replies (reservationsSettled) instead of giving commands longer. Redis behind a delaying
// proxy shows what slow replies cost: measured per window, never above 1.10 x the limit (docs/scaling.md).
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Governor, loadRedisSharedBudget } from '../../../src/governance/index.ts';
import type { AdmitRequest, ReserveRequest } from '../../../src/governance/index.ts';
import { MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';
import { startDelayingProxy } from '../../support/delayingProxy.ts';

const { createRedisSharedBudget } = await loadRedisSharedBudget();

const redisUrl = process.env.REDIS_URL;
if (!redisUrl) console.warn('REDIS_URL is not set: the shared-counter suite against Redis is skipped.');

const LIMIT = 2000;
const closers: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function source() {
  return new MemoryLimitSource().tenant('acme', { API_REQUESTS: { override: { ratePerSecond: LIMIT } }, INGEST: { override: { ratePerSecond: 500, burst: 500 } } });
}

async function sharedGovernor(url: string, keyPrefix: string, limitSource = source()) {
  // The production command timeout (createRedisSharedBudget's default, 250 ms).
  const budget = createRedisSharedBudget({ url, keyPrefix });
  expect(await budget.ready()).toBe(true);
  const governor = new Governor({ limitSource, sharedBudget: budget, retryMs: 20 });
  closers.push(() => budget.close(), () => governor.close());
  governor.confirmTenant('acme');
  governor.admit({ tenant: 'acme', dimension: 'AI_INFERENCE', units: 0, at: 0 });
  await governor.loadsSettled();
  return { governor, budget };
}

const apiRequest = (at: number) => ({ tenant: 'acme', dimension: 'API_REQUESTS', units: 1, at }) as const;

/** Offers `perStep` requests to each governor at each of 100 steps of one window, letting replies arrive between steps. */
async function driveWindow(governors: Governor[], windowStartMs: number, perStep: number): Promise<number> {
  let admitted = 0;
  for (let step = 0; step < 100; step++) {
    const at = windowStartMs + step * 10;
    for (const governor of governors) {
      for (let i = 0; i < perStep; i++) if (governor.admit(apiRequest(at)).admitted) admitted++;
    }
    await Promise.all(governors.map((governor) => governor.reservationsSettled()));
  }
  return admitted;
}

describe.skipIf(!redisUrl)('shared counters on Redis', () => {
  const prefix = () => `gl-test:${randomBytes(6).toString('hex')}:`;
  const windowStart = (Math.floor(Date.now() / 1000) + 10) * 1000;

  it('holds the combined admissions of two replicas within [0.95, 1.10] x the limit over 10 windows', async () => {
    const keyPrefix = prefix();
    const a = await sharedGovernor(redisUrl!, keyPrefix);
    const b = await sharedGovernor(redisUrl!, keyPrefix);
    for (let w = 0; w < 10; w++) {
      const admitted = await driveWindow([a.governor, b.governor], windowStart + w * 1000, 20); // 2x the limit offered
      expect(admitted / LIMIT).toBeGreaterThanOrEqual(0.95);
      expect(admitted / LIMIT).toBeLessThanOrEqual(1.1);
    }
    expect(a.governor.stats().sharedFallbackActive).toBe(false);
  });

  it('applies STABLE_DOWNSAMPLE before the shared budget and still holds the shared limit', async () => {
    const keyPrefix = prefix();
    const downsampling = () =>
      new MemoryLimitSource().tenant('acme', { API_REQUESTS: { override: { ratePerSecond: LIMIT } } }, { apiOverLimitPolicy: 'STABLE_DOWNSAMPLE' });
    const replicas = [];
    for (let r = 0; r < 2; r++) {
      const budget = createRedisSharedBudget({ url: redisUrl!, keyPrefix });
      expect(await budget.ready()).toBe(true);
      const governor = new Governor({ limitSource: downsampling(), sharedBudget: budget });
      closers.push(() => budget.close(), () => governor.close());
      governor.admit({ tenant: 'acme', dimension: 'AI_INFERENCE', units: 0, at: 0 });
      await governor.loadsSettled();
      replicas.push(governor);
    }
    for (let w = 0; w < 4; w++) {
      let admitted = 0;
      const byCaller = new Map<string, Set<boolean>>();
      for (let step = 0; step < 100; step++) {
        for (const [r, governor] of replicas.entries()) {
          for (let i = 0; i < 30; i++) {
            // 1,000 callers per replica, each seen three times a window.
            const callerKey = `caller-${r}-${(step * 30 + i) % 1000}`;
            const decision = governor.admit({ ...apiRequest(windowStart + w * 1000 + step * 10), callerKey });
            if (decision.admitted) admitted++;
            else expect(decision.behaviour).toBe('STABLE_DOWNSAMPLE');
            byCaller.set(callerKey, (byCaller.get(callerKey) ?? new Set()).add(decision.admitted));
          }
        }
        await Promise.all(replicas.map((governor) => governor.reservationsSettled()));
      }
      expect(admitted).toBeLessThanOrEqual(LIMIT * 1.02);
      if (w > 0) {
        // Past the first window callers are wholly in or out; only a kept caller can be cut at the shared limit.
        const wholly = [...byCaller.values()].filter((outcomes) => outcomes.size === 1).length;
        expect(wholly / byCaller.size).toBeGreaterThan(0.9);
      }
    }
  });

  it('shares a token bucket between replicas', async () => {
    const keyPrefix = prefix();
    const replicas = [await sharedGovernor(redisUrl!, keyPrefix), await sharedGovernor(redisUrl!, keyPrefix)];
    let admitted = 0;
    const start = windowStart;
    for (let step = 0; step <= 400; step++) {
      for (const { governor } of replicas) {
        for (let i = 0; i < 5; i++) {
          if (governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: start + step * 10 }).admitted) admitted++;
        }
      }
      await Promise.all(replicas.map(({ governor }) => governor.reservationsSettled()));
    }
    const allowed = 500 + 500 * 4; // the burst plus four seconds at 500/s
    expect(admitted / allowed).toBeGreaterThanOrEqual(0.95);
    expect(admitted / allowed).toBeLessThanOrEqual(1.1);
  });

  /** One whole second of slowReplies' run. */
  interface MeasuredSecond {
    /** Admitted / limit. */
    ratio: number;
    /**
     * Redis answered within the set delay as far as the replicas could tell: the chunks the proxy handed on in
     * the second were held at most LATE_MS past the delay at the median, and no step of the loop came more
     * than LATE_MS late.
     */
    onTime: boolean;
    /** Admissions made alone at half the limit (the shared budget given up for a reply past the timeout). */
    fallbackAdmissions: number;
  }

  /**
   * How late a reply or a step may be before a second no longer counts as run at the set delay. A busy machine
   * (other suites on both cores) holds this process's timers back: its replies then come later than the set
   * delay, which is another row of docs/scaling.md's table, not a breach of this one's band.
   */
  const LATE_MS = 5;

  /**
   * Two replicas through a proxy that delays every byte `delayMs` each way, on the wall clock (what matters is
   * what they admit while a reply is on its way): each is offered 2,000 requests a second (2 x the limit
   * together) in steps of about 10 ms, without waiting for replies. The demand follows the clock, not the
   * steps: each step offers what the time since the step before calls for, so a step that comes late does
   * not lower it. Runs whole seconds until `wanted` of them were on time (MeasuredSecond), or `wanted` x 6.
   */
  async function slowReplies(delayMs: number, wanted: number): Promise<MeasuredSecond[]> {
    const proxy = await startDelayingProxy({ host: new URL(redisUrl!).hostname, port: Number(new URL(redisUrl!).port || 6379) }, 0);
    closers.push(() => proxy.close());
    const keyPrefix = prefix();
    const replicas = [await sharedGovernor(`redis://127.0.0.1:${proxy.port}`, keyPrefix), await sharedGovernor(`redis://127.0.0.1:${proxy.port}`, keyPrefix)];
    const admittedBySecond = new Map<number, number>();
    const fallbackBySecond = new Map<number, number>();
    const lateSeconds = new Set<number>();
    const secondOf = (ms: number) => Math.floor(ms / 1000);
    // How long each chunk handed on in a second was held: one chunk held back by a busy machine's timers does
    // not make a second late, the replies the replicas saw at the median do.
    const heldBySecond = new Map<number, number[]>();
    const repliesLate = (second: number) => {
      const held = (heldBySecond.get(second) ?? []).sort((a, b) => a - b);
      return held.length > 0 && held[Math.floor(held.length / 2)]! > delayMs + LATE_MS;
    };
    proxy.delayMs = delayMs;
    proxy.onHandOff = (heldMs, atMs) => {
      const second = secondOf(atMs);
      const held = heldBySecond.get(second);
      if (held) held.push(heldMs);
      else heldBySecond.set(second, [heldMs]);
    };
    const fallbackAdmissions = () => replicas.reduce((sum, { governor }) => sum + governor.stats().sharedFallbackAdmissions, 0);
    const firstSecond = secondOf(Date.now()) + 1;
    while (Date.now() < firstSecond * 1000) await new Promise((resolve) => setTimeout(resolve, 5));
    const onTimeSeconds = () => Array.from({ length: secondOf(Date.now()) - firstSecond }, (_, i) => firstSecond + i).filter((second) => !lateSeconds.has(second) && !repliesLate(second)).length;
    const lastSecond = firstSecond + wanted * 6;
    let stepMs = Date.now();
    let fallbackBefore = fallbackAdmissions();
    while (Date.now() < lastSecond * 1000 && onTimeSeconds() < wanted) {
      const now = Date.now();
      // A step late past its 10 ms: the seconds it spans were not run at the set delay (the loop was held).
      if (now - stepMs > 10 + LATE_MS) for (let second = secondOf(stepMs); second <= secondOf(now); second++) lateSeconds.add(second);
      const offered = Math.round(2 * (now - stepMs));
      stepMs = now;
      for (const { governor } of replicas) {
        for (let i = 0; i < offered; i++) {
          const at = Date.now();
          if (governor.admit(apiRequest(at)).admitted) admittedBySecond.set(secondOf(at), (admittedBySecond.get(secondOf(at)) ?? 0) + 1);
        }
      }
      const fallbackNow = fallbackAdmissions();
      if (fallbackNow > fallbackBefore) fallbackBySecond.set(secondOf(now), (fallbackBySecond.get(secondOf(now)) ?? 0) + fallbackNow - fallbackBefore);
      fallbackBefore = fallbackNow;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Every second before the current one is whole: nothing is admitted after the loop.
    const seconds = Array.from({ length: secondOf(Date.now()) - firstSecond }, (_, i) => firstSecond + i);
    const measured = seconds.map((second) => ({
      ratio: (admittedBySecond.get(second) ?? 0) / LIMIT,
      onTime: !lateSeconds.has(second) && !repliesLate(second),
      fallbackAdmissions: fallbackBySecond.get(second) ?? 0,
    }));
    const shown = measured.map(({ ratio, onTime, fallbackAdmissions }) => `${ratio.toFixed(3)}${onTime ? '' : ' (late)'}${fallbackAdmissions > 0 ? ' (fell back)' : ''}`);
    console.log(`Redis replies ${delayMs} ms late each way: admitted / limit per second ${shown.join(', ')}`);
    return measured;
  }

  it('holds [0.95, 1.10] x the limit with Redis 10 ms away each way (20 ms round trips)', { timeout: 60_000 }, async ({ skip }) => {
    const measured = await slowReplies(10, 5);
    // No second passes 1.10 x, however late the replies came.
    for (const { ratio } of measured) expect(ratio).toBeLessThanOrEqual(1.1);
    const onTime = measured.filter((second) => second.onTime);
    // The band is the promise while Redis answers within about 10 ms each way: judged on the seconds that ran so.
    for (const { ratio, fallbackAdmissions } of onTime) {
      expect(fallbackAdmissions).toBe(0);
      expect(ratio).toBeGreaterThanOrEqual(0.95);
    }
    skip(onTime.length < 3, `only ${onTime.length} of ${measured.length} seconds had Redis within 10 ms on this busy machine: too few to judge the lower bound`);
  });

  it.each([50, 200])(
    'never admits above 1.10 x the limit when Redis replies come %i ms late each way (measured: slow replies cost admissions instead)',
    { timeout: 60_000 },
    async (delayMs) => {
      // 50 ms each way is within the 250 ms command timeout: the replicas wait for their reservations and
      // admit less than the limit (docs/scaling.md gives the figures). 200 ms each way passes it: each replica
      // falls back to half the limit alone, which together is the limit.
      const measured = await slowReplies(delayMs, 5);
      for (const { ratio } of measured) expect(ratio).toBeLessThanOrEqual(1.1);
      const onTime = measured.filter((second) => second.onTime);
      if (2 * delayMs > 250) expect(measured.some((second) => second.fallbackAdmissions > 0)).toBe(true);
      else for (const second of onTime) expect(second.fallbackAdmissions).toBe(0);
    },
  );

  it('meters at half the limit, without an exception, when Redis is at a closed port', async () => {
    const errors: string[] = [];
    const budget = createRedisSharedBudget({ url: 'redis://127.0.0.1:1', keyPrefix: prefix(), onError: () => {} });
    expect(await budget.ready(100)).toBe(false);
    const governor = new Governor({ limitSource: source(), sharedBudget: budget, onError: (_e, during) => errors.push(during) });
    closers.push(() => budget.close(), () => governor.close());
    governor.confirmTenant('acme');
    governor.admit(apiRequest(windowStart));
    await governor.loadsSettled();
    // Its ceilings known, the tenant is charged on the shared counter: the reservation fails.
    governor.admit(apiRequest(windowStart));
    await governor.reservationsSettled();
    let admitted = 0;
    let last;
    for (let i = 0; i < 3000; i++) {
      last = governor.admit(apiRequest(windowStart + 1000));
      if (last.admitted) admitted++;
    }
    expect(admitted).toBe(LIMIT / 2);
    expect(last).toMatchObject({ admitted: false, limit: LIMIT / 2, behaviour: 'REJECT' });
    expect(governor.stats()).toMatchObject({ sharedFallbackActive: true, sharedFallbackAdmissions: LIMIT / 2 });
    expect(errors).toContain('shared');
  });

  it('falls back when the connection dies mid-run and returns to shared counting when Redis answers', async () => {
    const proxy = await startProxy(new URL(redisUrl!));
    closers.push(() => proxy.stop());
    const { governor } = await sharedGovernor(`redis://127.0.0.1:${proxy.port}`, prefix());
    expect(await driveWindow([governor], windowStart, 30)).toBe(LIMIT);
    expect(governor.stats().sharedFallbackActive).toBe(false);

    await proxy.stop();
    let admitted = 0;
    for (let i = 0; i < 3000; i++) {
      if (governor.admit(apiRequest(windowStart + 1000)).admitted) admitted++;
      if (i === 0) await governor.reservationsSettled();
    }
    expect(governor.stats().sharedFallbackActive).toBe(true);
    expect(admitted).toBeLessThanOrEqual(LIMIT / 2 + LIMIT / 100);

    await proxy.start();
    let window = windowStart + 2000;
    while (governor.stats().sharedFallbackActive) {
      governor.admit(apiRequest(window));
      await governor.reservationsSettled();
      await new Promise((resolve) => setImmediate(resolve));
      window += 1;
    }
    // The return takes as many 1 ms steps as the reconnection takes (thousands on a busy machine), each admitting
    // in the second it falls in: the measured window is a whole second after the last of them.
    const measured = Math.max(windowStart + 5000, (Math.floor(window / 1000) + 2) * 1000);
    expect(await driveWindow([governor], measured, 30)).toBe(LIMIT);
  });
  it('counts what two replicas cut off together admitted alone once they return within the window: the window holds the limit', async () => {
    const proxy = await startProxy(new URL(redisUrl!));
    closers.push(() => proxy.stop());
    const keyPrefix = prefix();
    const url = `redis://127.0.0.1:${proxy.port}`;
    const replicas = [(await sharedGovernor(url, keyPrefix)).governor, (await sharedGovernor(url, keyPrefix)).governor];
    // A window of its own, well ahead of the others here: admission times are the requests' own.
    const window = windowStart + 30_000;
    await proxy.stop();
    let aloneAdmitted = 0;
    for (const governor of replicas) {
      for (let i = 0; i < LIMIT; i++) {
        if (governor.admit(apiRequest(window + 100)).admitted) aloneAdmitted++;
        if (i === 0) await governor.reservationsSettled();
      }
      expect(governor.stats().sharedFallbackActive).toBe(true);
    }
    // Each at half the limit (and the first request's credit, before its reservation failed).
    expect(aloneAdmitted).toBeGreaterThanOrEqual(LIMIT);
    expect(aloneAdmitted).toBeLessThanOrEqual(LIMIT + 2 * (LIMIT / 100));

    await proxy.start();
    // Requests of no units until both are back (each probes Redis from its admit): a replica back before the other
    // would be granted slices the other's debt, not yet told, does not account for (a replica still cut off is
    // the partial case, docs/scaling.md).
    while (replicas.some((governor) => governor.stats().sharedFallbackActive)) {
      for (const governor of replicas) governor.admit({ ...apiRequest(window + 200), units: 0 });
      await Promise.all(replicas.map((governor) => governor.reservationsSettled()));
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Back on the shared counter, the rest of the window offered 2 x the limit.
    let sharedAdmitted = 0;
    for (let step = 0; step < 100; step++) {
      for (const governor of replicas) {
        for (let i = 0; i < 20; i++) if (governor.admit(apiRequest(window + 300 + step * 5)).admitted) sharedAdmitted++;
      }
      await Promise.all(replicas.map((governor) => governor.reservationsSettled()));
    }
    const total = aloneAdmitted + sharedAdmitted;
    console.log(`replicas cut off together, back within the window: ${aloneAdmitted} admitted alone, ${sharedAdmitted} shared after; ${total} of a limit of ${LIMIT}`);
    // What they admitted alone was debited from the window's shared count: the return adds at most each replica's
    // minimum slice (docs/scaling.md), where it used to add the whole limit again (2 x).
    expect(total).toBeLessThanOrEqual(LIMIT + 2 * (LIMIT / 100));
  });
});

describe.skipIf(!redisUrl)('shared counting stays sane (issue 34, item 5)', () => {
  const prefix = () => `gl-test:${randomBytes(6).toString('hex')}:`;
  // The numbers: AI_INFERENCE at 5 a second, burst 10; and a tenant with room for a batch.
  const RATE = 5;
  const BURST = 10;
  const smallSource = () =>
    new MemoryLimitSource()
      .tenant('acme', { AI_INFERENCE: { override: { ratePerSecond: RATE, burst: BURST } } })
      .tenant('wide', { AI_INFERENCE: { override: { ratePerSecond: 250, burst: 500 } } });
  const inference = (tenant: string, units: number, at: number) => ({ tenant, dimension: 'AI_INFERENCE', units, at }) as const;
  const bucketKey = (keyPrefix: string, tenant: string) => `${keyPrefix}AI_INFERENCE:-:readings:{${tenant}}`;
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(redisUrl!);
  });
  afterAll(() => redis?.disconnect());

  /** Admits `request` until admitted, letting reservations be answered between tries; the tries it took (null: never). */
  async function admittedWithin(governor: Governor, request: AdmitRequest, tries: number): Promise<number | null> {
    for (let i = 1; i <= tries; i++) {
      if (governor.admit(request).admitted) return i;
      await governor.reservationsSettled();
    }
    return null;
  }

  it('refuses a count over the burst as never-fits with a bounded retry, charges Redis nothing, and the next unit is admitted', async () => {
    const keyPrefix = prefix();
    const a = await sharedGovernor(redisUrl!, keyPrefix, smallSource());
    const b = await sharedGovernor(redisUrl!, keyPrefix, smallSource());
    const at = Date.now();
    const huge = a.governor.admit(inference('acme', 999_999_999, at));
    expect(huge).toMatchObject({ admitted: false, neverFits: true, burst: BURST, behaviour: 'REJECT' });
    // The time to a full bucket, as metering alone: never the 200,000,000 s the count would take.
    expect(huge.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(huge.retryAfterSeconds).toBeLessThanOrEqual(BURST / RATE);
    await a.governor.reservationsSettled();
    const tokens = await redis.hget(bucketKey(keyPrefix, 'acme'), 'tokens');
    expect(tokens === null || Number(tokens) >= BURST - 1).toBe(true);
    // Both replicas admit the next unit at once.
    expect(await admittedWithin(a.governor, inference('acme', 1, at), 1)).toBe(1);
    expect(await admittedWithin(b.governor, inference('acme', 1, at), 1)).toBe(1);
  });

  it('bounds a reservation in the Lua script itself: want and debt at most a burst, the bucket never below minus one burst', async () => {
    const keyPrefix = prefix();
    const budget = createRedisSharedBudget({ url: redisUrl!, keyPrefix });
    closers.push(() => budget.close());
    expect(await budget.ready()).toBe(true);
    const at = Date.now();
    const reserve = (request: Partial<ReserveRequest>) =>
      budget.reserve({ key: 'k', kind: 'TOKEN_BUCKET', ratePerSecond: RATE, burst: BURST, atMs: at, wantUnits: 1, debtUnits: 0, ...request });
    expect(await reserve({ wantUnits: 999_999_999 })).toBe(BURST);
    expect(await reserve({ debtUnits: 999_999_999 })).toBe(0);
    expect(Number(await redis.hget(`${keyPrefix}k`, 'tokens'))).toBe(-BURST);
    // The key lives as long as refilling from the floor takes, plus a minute: no longer, so it is not kept forever.
    const ttlMs = await redis.pttl(`${keyPrefix}k`);
    expect(ttlMs).toBeGreaterThan(60_000);
    expect(ttlMs).toBeLessThanOrEqual(60_000 + (2 * BURST * 1000) / RATE);
    // From minus one burst: nothing while the debt refills (2 s at 5 a second), a unit again within two bursts' refill.
    expect(await reserve({ atMs: at + (BURST * 1000) / RATE })).toBe(0);
    expect(await reserve({ atMs: at + (2 * BURST * 1000) / RATE + 200 })).toBe(1);
    // A key an older version drove to -999,999,989 is raised to the floor: usable again within two bursts' refill.
    await redis.hset(`${keyPrefix}poisoned`, 'tokens', '-999999989', 'ms', String(at));
    expect(await reserve({ key: 'poisoned', atMs: at + (2 * BURST * 1000) / RATE + 200 })).toBe(1);
    // Arguments that are no numbers are refused, and the key is left as it was.
    await expect(reserve({ key: 'bad', ratePerSecond: Number.NaN })).rejects.toThrow(/rate and burst/);
    await expect(reserve({ key: 'bad', burst: 0 })).rejects.toThrow(/rate and burst/);
    expect(await redis.exists(`${keyPrefix}bad`)).toBe(0);
    // A fixed window: a grant is at most the limit, whatever the debt.
    const windowAt = (Math.floor(at / 1000) + 5) * 1000;
    const window = (request: Partial<ReserveRequest>) =>
      budget.reserve({ key: 'w', kind: 'FIXED_WINDOW', ratePerSecond: 100, burst: 100, atMs: windowAt, wantUnits: 1, debtUnits: 0, ...request });
    expect(await window({ debtUnits: 999_999_999, wantUnits: 999_999_999 })).toBe(0);
    expect(Number(await redis.get(`${keyPrefix}w:${windowAt / 1000}`))).toBe(100);
    expect(await window({ atMs: windowAt + 1000, wantUnits: 999_999_999 })).toBe(100);
  });

  it("does not lock a tenant out after its shared bucket is spent or its key expires", async () => {
    const keyPrefix = prefix();
    const a = await sharedGovernor(redisUrl!, keyPrefix, smallSource());
    const b = await sharedGovernor(redisUrl!, keyPrefix, smallSource());
    const at = Date.now();
    let admitted = 0;
    for (let i = 0; i < 40; i++) {
      for (const { governor } of [a, b]) if (governor.admit(inference('acme', 1, at)).admitted) admitted++;
      await Promise.all([a.governor.reservationsSettled(), b.governor.reservationsSettled()]);
    }
    // The burst, and at most a minimum slice of credit per replica.
    expect(admitted).toBeGreaterThanOrEqual(BURST);
    expect(admitted).toBeLessThanOrEqual(BURST + 2);
    expect(Number(await redis.hget(bucketKey(keyPrefix, 'acme'), 'tokens'))).toBeGreaterThanOrEqual(-BURST);
    // The key expires (deleted here, as its expiry would): once a burst's refill time has passed by the requests'
    // own clock, each replica asks again and is admitted.
    await redis.del(bucketKey(keyPrefix, 'acme'));
    const later = at + (BURST * 1000) / RATE;
    expect(await admittedWithin(a.governor, inference('acme', 1, later), 3)).not.toBeNull();
    expect(await admittedWithin(b.governor, inference('acme', 1, later), 3)).not.toBeNull();
    // And without the expiry, the bucket refills by itself: two bursts' refill time after it was spent, both admit.
    const refilled = at + (2 * BURST * 1000) / RATE + 1000;
    for (let i = 0; i < 20; i++) a.governor.admit(inference('acme', 1, later));
    await a.governor.reservationsSettled();
    expect(await admittedWithin(a.governor, inference('acme', 1, refilled), 3)).not.toBeNull();
    expect(await admittedWithin(b.governor, inference('acme', 1, refilled), 3)).not.toBeNull();
    // A count over the burst on a warm replica, then its slice spent: it asks again within a burst's refill, not
    // after the 200,000,000 s the count would have taken (the reported lockout of over 3 minutes).
    await b.governor.reservationsSettled();
    expect(b.governor.admit(inference('acme', 999_999_999, refilled))).toMatchObject({ admitted: false, neverFits: true });
    await b.governor.reservationsSettled();
    for (let i = 0; i < 40; i++) {
      b.governor.admit(inference('acme', 1, refilled));
      await b.governor.reservationsSettled();
    }
    const afterRefill = refilled + (2 * BURST * 1000) / RATE + 1000;
    expect(await admittedWithin(b.governor, inference('acme', 1, afterRefill), 3)).not.toBeNull();
  });

  it("admits a tenant's first batch as far as the shared tokens allow when its ceilings were loaded at start", async () => {
    const limits = smallSource();
    const budget = createRedisSharedBudget({ url: redisUrl!, keyPrefix: prefix() });
    expect(await budget.ready()).toBe(true);
    const governor = new Governor({ limitSource: limits, sharedBudget: budget, retryMs: 20 });
    closers.push(() => budget.close(), () => governor.close());
    // As the service at start (src/control-plane/limitChanges.ts): every registered tenant's ceilings read in bulk,
    // so the tenant is known before anything was ever admitted for it here.
    governor.learnLimits((await limits.loadTenants(['acme'])).values(), await limits.loadPlatformDefaults());
    const at = Date.now();
    for (let i = 0; i < 20; i++) governor.plan(inference('acme', 1, at));
    const reserving = governor.reservePlanned();
    expect(reserving).not.toBeNull();
    await reserving;
    let admitted = 0;
    for (let i = 0; i < 20; i++) if (governor.admit(inference('acme', 1, at)).admitted) admitted++;
    expect(admitted).toBe(BURST);
  });

  it('admits a batch as far as the shared tokens allow (the admission API plans, reserves, then decides)', async () => {
    const keyPrefix = prefix();
    const a = await sharedGovernor(redisUrl!, keyPrefix, smallSource());
    const b = await sharedGovernor(redisUrl!, keyPrefix, smallSource());
    const at = Date.now();
    // Both replicas know the tenant's ceilings (a name's first admissions are metered alone while they load).
    for (const { governor } of [a, b]) {
      governor.admit(inference('wide', 0, at));
      await governor.loadsSettled();
    }
    // Another replica spends two of the 500: Redis holds about 498 (what b reserved ahead is b's).
    for (let i = 0; i < 2; i++) expect(await admittedWithin(b.governor, inference('wide', 1, at), 3)).not.toBeNull();
    // Replica a holds a slice from one admission of its own.
    expect(await admittedWithin(a.governor, inference('wide', 1, at), 3)).not.toBeNull();
    await a.governor.reservationsSettled();
    const batch = async (governor: Governor, tenant: string, count: number): Promise<number> => {
      for (let i = 0; i < count; i++) governor.plan(inference(tenant, 1, at));
      await governor.reservePlanned();
      let admittedInBatch = 0;
      for (let i = 0; i < count; i++) if (governor.admit(inference(tenant, 1, at)).admitted) admittedInBatch++;
      return admittedInBatch;
    };
    expect(await batch(a.governor, 'wide', 50)).toBe(50);
    // All the rest at one instant (nothing refills): admitted up to what Redis and the replicas hold, no more.
    const rest = await batch(a.governor, 'wide', 1000);
    const heldByB = b.governor.admit(inference('wide', 0, at)).remaining;
    await b.governor.reservationsSettled();
    expect(rest).toBeGreaterThanOrEqual(500 - 3 - 50 - heldByB - 5);
    expect(3 + 50 + rest).toBeLessThanOrEqual(500 + 5);
    // The tenant: a batch of 50 on a burst of 10 gets the 10, no more, and the rest a retry within a burst.
    expect(await batch(a.governor, 'acme', 50)).toBe(BURST);
    const refused = a.governor.admit(inference('acme', 1, at));
    expect(refused).toMatchObject({ admitted: false, neverFits: false });
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(BURST / RATE);
  });
});

/** A TCP proxy to Redis that can be stopped (every connection cut) and started again on the same port. */
async function startProxy(target: URL) {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  const start = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port || 6379), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => socket.destroy());
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      if (server === null) return resolve();
      server.close(() => resolve());
      server = null;
    });
  await start();
  return { get port() { return port; }, start, stop };
}
