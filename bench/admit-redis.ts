// Governor.admit on two replicas with ceilings shared through Redis (slice reservations in the background) against
// rate-limiter-flexible's RateLimiterRedis.consume (one Redis round trip per call), same Redis, same keys.
// 20 tenants on API_REQUESTS (5,000 requests per one-second window), offered more than the limit on real
// time; each side yields to the event loop every 1,000 calls (consume is awaited in batches of 1,000).
// Accuracy: admitted per tenant per complete window over min(limit, offered), to stay within [0.95, 1.10].
// Last line: JSON {bench, ours, baseline, ratio, unit, ...}.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { Governor, loadRedisSharedBudget } from '../src/governance/index.ts';
import type { LimitSource, TenantGovernanceRecord } from '../src/governance/index.ts';

const { createRedisSharedBudget } = await loadRedisSharedBudget();

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const TENANTS = Number(process.env.BENCH_TENANTS ?? 20);
const LIMIT = 5000;
const SECONDS = Number(process.env.BENCH_SECONDS ?? (process.env.BENCH_QUICK === '1' ? 3 : 6));
const BATCH = 1000;
const names = Array.from({ length: TENANTS }, (_, i) => `tenant-${i}`);
const run = randomBytes(4).toString('hex');

const limitSource: LimitSource = {
  async loadTenants(ids) {
    return new Map<string, TenantGovernanceRecord>(ids.map((id) => [id, { tenantId: id, tierId: 'standard', levels: {} }]));
  },
  async loadPlatformDefaults() {
    return {};
  },
};

const yieldToEventLoop = () => new Promise((resolve) => setImmediate(resolve));

async function replica() {
  const budget = createRedisSharedBudget({ url: REDIS_URL, keyPrefix: `bench:${run}:` });
  if (!(await budget.ready())) throw new Error(`Redis at ${REDIS_URL} did not answer`);
  const governor = new Governor({ limitSource, sharedBudget: budget });
  for (const tenant of names) governor.confirmTenant(tenant);
  for (const tenant of names) governor.admit({ tenant, dimension: 'AI_INFERENCE', units: 0, at: Date.now() });
  await governor.loadsSettled();
  return { governor, budget };
}

async function runOurs() {
  // Two replicas in this process, each with its own Redis connection, taking alternate batches.
  const replicas = [await replica(), await replica()];
  const admittedBySecond = new Map<number, number[]>();
  const offeredBySecond = new Map<number, number[]>();
  let calls = 0;
  const started = Date.now();
  const endAt = started + SECONDS * 1000;
  let at = started;
  while (at < endAt) {
    at = Date.now();
    const second = Math.floor(at / 1000);
    let counts = admittedBySecond.get(second);
    if (!counts) admittedBySecond.set(second, (counts = new Array<number>(TENANTS).fill(0)));
    let offered = offeredBySecond.get(second);
    if (!offered) offeredBySecond.set(second, (offered = new Array<number>(TENANTS).fill(0)));
    const { governor } = replicas[(calls / BATCH) % 2]!;
    for (let i = 0; i < BATCH; i++) {
      const tenant = (calls + i) % TENANTS;
      offered[tenant]!++;
      if (governor.admit({ tenant: names[tenant]!, dimension: 'API_REQUESTS', units: 1, at }).admitted) counts[tenant]!++;
    }
    calls += BATCH;
    await yieldToEventLoop();
  }
  const elapsed = (Date.now() - started) / 1000;
  const stats = replicas.map(({ governor }) => governor.stats());
  for (const { governor, budget } of replicas) {
    await governor.close();
    await budget.close();
  }
  // Complete windows only: drop the first and the last second.
  const seconds = [...admittedBySecond.keys()].sort().slice(1, -1);
  // Admitted over what the limit allowed of what was offered: 1 is exact.
  const ratios = seconds.flatMap((second) =>
    admittedBySecond.get(second)!.map((count, tenant) => count / Math.min(LIMIT, offeredBySecond.get(second)![tenant]!)),
  );
  return { perSecond: calls / elapsed, minRatio: Math.min(...ratios), maxRatio: Math.max(...ratios), windows: ratios.length, stats };
}

async function runBaseline() {
  const redis = new Redis(REDIS_URL);
  const limiter = new RateLimiterRedis({ storeClient: redis, points: LIMIT, duration: 1, keyPrefix: `bench-rlf:${run}` });
  let calls = 0;
  let admitted = 0;
  const started = Date.now();
  const endAt = started + SECONDS * 1000;
  while (Date.now() < endAt) {
    const batch: Promise<unknown>[] = [];
    for (let i = 0; i < BATCH; i++) batch.push(limiter.consume(names[(calls + i) % TENANTS]!, 1));
    for (const result of await Promise.allSettled(batch)) if (result.status === 'fulfilled') admitted++;
    calls += BATCH;
  }
  const elapsed = (Date.now() - started) / 1000;
  redis.disconnect();
  return { perSecond: calls / elapsed, admitted };
}

const ours = await runOurs();
const baseline = await runBaseline();
const result = {
  bench: 'admit-redis',
  ours: Math.round(ours.perSecond),
  baseline: Math.round(baseline.perSecond),
  ratio: Number((ours.perSecond / baseline.perSecond).toFixed(2)),
  unit: 'admits/s',
  baselineIs: 'a peer: rate-limiter-flexible RateLimiterRedis.consume on the same Redis and keys (one round trip a call)',
  generator: 'in-process loops on real time, two Governor replicas in this process; Redis shared, unpinned',
  quick: process.env.BENCH_QUICK === '1',
  tenants: TENANTS,
  replicas: 2,
  limitPerWindow: LIMIT,
  accuracyMin: Number(ours.minRatio.toFixed(3)),
  accuracyMax: Number(ours.maxRatio.toFixed(3)),
  windowsMeasured: ours.windows,
  // A reservation that times out (a stalled process on a loaded host) means half-limit local metering for a
  // moment, uncoordinated with the slices already used in that window: accuracy holds only without these.
  sharedFailures: ours.stats.reduce((sum, each) => sum + each.sharedFailures, 0),
  sharedFallbackAdmissions: ours.stats.reduce((sum, each) => sum + each.sharedFallbackAdmissions, 0),
};
console.log(
  `shared Governor.admit ${result.ours.toLocaleString('en-US')}/s (admitted/limit per window ${result.accuracyMin}..${result.accuracyMax}); ` +
    `RateLimiterRedis.consume ${result.baseline.toLocaleString('en-US')}/s`,
);
console.log(JSON.stringify(result));
