// Shared counters on a Redis Cluster of the suite's own (six redis-server processes: three masters, three
// replicas, test/support/privateServers.ts), through ioredis' Cluster client. Two Governors (two service
// replicas' worth) share a tenant's limit within [0.95, 1.10] per window; every key of the tenant sits in one
// slot; and when the master of that slot is SIGKILLed mid-run no admit throws, each replica meters at half the
// limit while its replica takes over, and shared counting is exact again within 5 s. Skipped, and said so,
// without redis-server and redis-cli.
import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Governor, loadRedisSharedBudget } from '../../../src/governance/index.ts';
import { MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';
import { windowRatios } from '../../support/windowRatios.ts';
import { startPrivateRedisCluster, type PrivateRedisCluster } from '../../support/privateServers.ts';

const { createRedisSharedBudget } = await loadRedisSharedBudget();

const cluster = await startPrivateRedisCluster();
const LIMIT = 2000;
const closers: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => cluster?.dispose());

const source = () =>
  new MemoryLimitSource().tenant('acme', { API_REQUESTS: { override: { ratePerSecond: LIMIT } }, INGEST: { override: { ratePerSecond: 500, burst: 500 } } });
/** Requests each replica offers per 10 ms step: 4,000 a second each when the loop keeps time, 2 x the limit when it runs at a quarter of that. */
const PER_STEP = 40;
const apiRequest = (at: number) => ({ tenant: 'acme', dimension: 'API_REQUESTS', units: 1, at }) as const;
const prefix = () => `gl-cluster:${randomBytes(6).toString('hex')}:`;

/** A Governor on the cluster as the service makes it (REDIS_URL naming every node), its ceilings loaded. */
async function clusterGovernor(redisCluster: PrivateRedisCluster, keyPrefix: string) {
  const budget = createRedisSharedBudget({ url: redisCluster.url, keyPrefix });
  expect(await budget.ready(10_000)).toBe(true);
  const governor = new Governor({ limitSource: source(), sharedBudget: budget });
  closers.push(() => budget.close(), () => governor.close());
  governor.confirmTenant('acme');
  governor.admit({ tenant: 'acme', dimension: 'AI_INFERENCE', units: 0, at: Date.now() });
  await governor.loadsSettled();
  return governor;
}

describe.skipIf(!cluster)('shared counters on a Redis Cluster (3 masters, 3 replicas)', () => {
  beforeAll(async () => cluster!.healthy('{acme}'));

  it('holds two replicas within [0.95, 1.10] x the limit over 10 windows, every key of the tenant in one slot', { timeout: 60_000 }, async () => {
    const keyPrefix = prefix();
    const governors = [await clusterGovernor(cluster!, keyPrefix), await clusterGovernor(cluster!, keyPrefix)];
    const windowStart = (Math.floor(Date.now() / 1000) + 10) * 1000;
    const ratios = await windowRatios(governors, LIMIT, windowStart, 10);
    // A token bucket of the same tenant, so the tenant has keys of two kinds.
    for (let i = 0; i < 3; i++) {
      governors[0]!.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at: Date.now() });
      await governors[0]!.reservationsSettled();
    }
    console.log(`Redis Cluster, two replicas: admitted / limit per window ${ratios.map((ratio) => ratio.toFixed(3)).join(' ')}`);
    for (const ratio of ratios) {
      expect(ratio).toBeGreaterThanOrEqual(0.95);
      expect(ratio).toBeLessThanOrEqual(1.1);
    }
    expect(governors.map((governor) => governor.stats().sharedFallbackActive)).toEqual([false, false]);

    const reader = new Cluster(cluster!.url.split(',').map((url) => ({ host: '127.0.0.1', port: Number(new URL(url).port) })));
    closers.push(() => reader.disconnect());
    // Before it is ready the client knows only its seed nodes, not which of them are masters.
    if (reader.status !== 'ready') await new Promise((resolve) => reader.once('ready', resolve));
    const keys = (await Promise.all(reader.nodes('master').map((node) => node.keys(`${keyPrefix}*`)))).flat();
    expect(keys.some((key) => key.startsWith(`${keyPrefix}INGEST:`))).toBe(true);
    expect(keys.some((key) => key.startsWith(`${keyPrefix}API_REQUESTS:`))).toBe(true);
    const slots = new Set(await Promise.all(keys.map((key) => reader.cluster('KEYSLOT', key))));
    expect([...slots]).toEqual([await reader.cluster('KEYSLOT', '{acme}')]);
  });

  it('finds the whole cluster from one seed node with REDIS_CLUSTER=on, tenants spread over the masters', async () => {
    const keyPrefix = prefix();
    const budget = createRedisSharedBudget({ url: cluster!.nodes[0]!.url, cluster: true, keyPrefix });
    closers.push(() => budget.close());
    expect(await budget.ready(10_000)).toBe(true);
    const at = Date.now();
    // Twelve tenants' keys: with three masters, some hash to slots of other nodes than the seed (MOVED followed).
    const tenants = Array.from({ length: 12 }, (_, i) => `tenant-${i}`);
    const granted = await Promise.all(
      tenants.map((tenant) => budget.reserve({ key: `API_REQUESTS:-:readings:{${tenant}}`, kind: 'FIXED_WINDOW', ratePerSecond: 100, burst: 100, atMs: at, wantUnits: 10, debtUnits: 0 })),
    );
    expect(granted).toEqual(tenants.map(() => 10));
    const owners = new Set(await Promise.all(tenants.map(async (tenant) => (await cluster!.masterOf(`{${tenant}}`)).port)));
    expect(owners.size).toBeGreaterThan(1);
  });

  it('meters at half the limit while a killed master fails over, without a caller error, and is exact again within 5 s', { timeout: 120_000 }, async () => {
    const keyPrefix = prefix();
    const governors = [await clusterGovernor(cluster!, keyPrefix), await clusterGovernor(cluster!, keyPrefix)];
    const admittedBySecond = new Map<number, number>();
    const offeredBySecond = new Map<number, number>();
    /** Fallback admissions of each replica, per second. */
    const fallbackBySecond = governors.map(() => new Map<number, number>());
    const lastFallback = governors.map(() => 0);
    let callerErrors = 0;
    let killedAt = 0;
    let killedPort = 0;
    let movedAt = 0;
    let fallbackSeen = false;
    let sharedAgainAt = 0;

    const firstSecond = Math.floor(Date.now() / 1000) + 1;
    while (Date.now() < firstSecond * 1000) await new Promise((resolve) => setTimeout(resolve, 5));
    const deadline = firstSecond * 1000 + 40_000;
    // Watches the slot's owner without blocking the loop that admits.
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        if (killedAt > 0 && movedAt === 0) {
          const port = await cluster!.masterPortOf('{acme}');
          if (port !== undefined && port !== killedPort) movedAt = Date.now();
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    while (Date.now() < deadline) {
      const now = Date.now();
      const second = Math.floor(now / 1000);
      if (killedAt === 0 && second >= firstSecond + 3) {
        const master = await cluster!.masterOf('{acme}');
        killedPort = master.port;
        killedAt = Date.now();
        void master.stop('SIGKILL');
      }
      for (const [r, governor] of governors.entries()) {
        for (let i = 0; i < PER_STEP; i++) {
          try {
            const at = Date.now();
            offeredBySecond.set(Math.floor(at / 1000), (offeredBySecond.get(Math.floor(at / 1000)) ?? 0) + 1);
            if (governor.admit(apiRequest(at)).admitted) admittedBySecond.set(Math.floor(at / 1000), (admittedBySecond.get(Math.floor(at / 1000)) ?? 0) + 1);
            // A fallback admission counts in the second it was metered at (the fallback's window), not in the second
            // its step began: a step that crossed a second's end once put 1,025 of two windows' admissions in one.
            const fallbackAdmissions = governor.stats().sharedFallbackAdmissions;
            fallbackBySecond[r]!.set(Math.floor(at / 1000), (fallbackBySecond[r]!.get(Math.floor(at / 1000)) ?? 0) + fallbackAdmissions - lastFallback[r]!);
            lastFallback[r] = fallbackAdmissions;
          } catch {
            callerErrors++;
          }
        }
      }
      if (governors.some((governor) => governor.stats().sharedFallbackActive)) fallbackSeen = true;
      if (fallbackSeen && sharedAgainAt === 0 && governors.every((governor) => !governor.stats().sharedFallbackActive)) sharedAgainAt = Date.now();
      // One whole second of real traffic after the return, then the accuracy is measured window by window.
      if (sharedAgainAt > 0 && movedAt > 0 && now > (Math.floor(sharedAgainAt / 1000) + 2) * 1000) break;
      // Replies are waited for between steps (as the first test does), so a machine too busy to answer within a
      // step does not show as refusals; a reply later than the command timeout is still a failure and a fallback.
      await Promise.all(governors.map((governor) => governor.reservationsSettled()));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    watching = false;
    await watcher;

    // Admitted over what the limit allowed of what was offered (a loaded machine may run the loop slower than it asks).
    const ratioIn = (second: number) => (admittedBySecond.get(second) ?? 0) / Math.min(LIMIT, offeredBySecond.get(second) ?? 0);
    const lastSecond = Math.floor(Date.now() / 1000) - 1;
    const ratios = [];
    for (let second = firstSecond; second <= lastSecond; second++) ratios.push(`${second - firstSecond}:${ratioIn(second).toFixed(3)}(${offeredBySecond.get(second) ?? 0})`);
    const gapSeconds = (sharedAgainAt - killedAt) / 1000;
    const after = await windowRatios(governors, LIMIT, (Math.floor(Date.now() / 1000) + 1) * 1000, 3);
    console.log(
      `Redis Cluster failover (node timeout 1 s): fallback from the kill until ${gapSeconds.toFixed(2)} s after it; the slot's new master seen ` +
        `${((movedAt - killedAt) / 1000).toFixed(2)} s after it, shared again ${((sharedAgainAt - movedAt) / 1000).toFixed(2)} s after that; ` +
        `admitted / min(limit, offered) per second (second:ratio(offered), kill in second 3) ${ratios.join(' ')}; ` +
        `then admitted / limit in 3 windows driven step by step ${after.map((ratio) => ratio.toFixed(3)).join(' ')}`,
    );

    expect(callerErrors).toBe(0);
    expect(fallbackSeen).toBe(true);
    expect(movedAt).toBeGreaterThan(0);
    expect(sharedAgainAt).toBeGreaterThan(0);
    // Each replica alone at half the limit while the slot moves.
    for (const bySecond of fallbackBySecond) for (const admitted of bySecond.values()) expect(admitted).toBeLessThanOrEqual(LIMIT / 2);
    // Shared again within 5 s of the slot's move (the move itself takes the node timeout and an election), and
    // exact then: the windows measured right after within the band.
    expect(sharedAgainAt - movedAt).toBeLessThanOrEqual(5000);
    for (const ratio of after) {
      expect(ratio).toBeGreaterThanOrEqual(0.95);
      expect(ratio).toBeLessThanOrEqual(1.1);
    }
    // After the second of the kill (where a replica's half-limit meter starts empty beside what it had admitted
    // shared), what a replica admitted alone is debited from the shared count when it returns: at most its
    // half still unknown to the counter while the other is already back, 1.5 x with two (and the credit of two
    // minimum slices). Before the debit the second of the return reached 1.96 x.
    for (let second = Math.floor(killedAt / 1000) + 1; second <= lastSecond; second++) expect(ratioIn(second)).toBeLessThanOrEqual(1.52);
    // Real traffic never passed 1.10 x the limit before the kill. (Below the limit it may be: on a loaded machine
    // a slice's reply can come after the requests that needed it, which slow replies cost, docs/scaling.md.)
    for (let second = firstSecond; second < Math.floor(killedAt / 1000); second++) expect(ratioIn(second)).toBeLessThanOrEqual(1.1);
  });
});
