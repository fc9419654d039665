// Governor.admit on two replicas with ceilings shared through Redis (slice reservations in the background) against
// rate-limiter-flexible's RateLimiterRedis.consume (one Redis round trip per call), same Redis, same keys; and the
// same two Governors on a Redis Cluster (three masters, three replicas: BENCH_REDIS_CLUSTER_URL, else one of our
// own started from redis-server), side by side with the single node, rounds alternating which goes first.
// 20 tenants on API_REQUESTS (5,000 requests per one-second window), offered more than the limit on real
// time; each side yields to the event loop every 1,000 calls (consume is awaited in batches of 1,000).
// Accuracy: admitted per tenant per complete window over min(limit, offered), to stay within [0.95, 1.10].
// Last line: JSON {bench, ours, baseline, ratio, unit, baselineIs, generator, cluster, ...}.
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { Governor, loadRedisSharedBudget } from '../src/governance/index.ts';
import type { LimitSource, TenantGovernanceRecord } from '../src/governance/index.ts';
import { startPrivateRedisCluster, type PrivateRedisCluster } from '../test/support/privateServers.ts';

const { createRedisSharedBudget } = await loadRedisSharedBudget();

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const TENANTS = Number(process.env.BENCH_TENANTS ?? 20);
const LIMIT = 5000;
const SECONDS = Number(process.env.BENCH_SECONDS ?? (process.env.BENCH_QUICK === '1' ? 3 : 6));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
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

async function replica(url: string, keyPrefix: string) {
  const budget = createRedisSharedBudget({ url, keyPrefix });
  if (!(await budget.ready(10_000))) throw new Error(`Redis at ${url} did not answer`);
  const governor = new Governor({ limitSource, sharedBudget: budget });
  for (const tenant of names) governor.confirmTenant(tenant);
  for (const tenant of names) governor.admit({ tenant, dimension: 'AI_INFERENCE', units: 0, at: Date.now() });
  await governor.loadsSettled();
  return { governor, budget };
}

async function runOurs(url: string, keyPrefix: string) {
  // Two replicas in this process, each with its own Redis connection, taking alternate batches.
  const replicas = [await replica(url, keyPrefix), await replica(url, keyPrefix)];
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

interface OursRound {
  perSecond: number;
  minRatio: number;
  maxRatio: number;
  windows: number;
  stats: ReturnType<Governor['stats']>[];
}

/** The rounds of one target, summed: admits per second over all of them, the accuracy's extremes, failures. */
function summary(rounds: OursRound[]) {
  return {
    perSecond: Math.round(rounds.reduce((sum, round) => sum + round.perSecond, 0) / rounds.length),
    perRound: rounds.map((round) => Math.round(round.perSecond)),
    accuracyMin: Number(Math.min(...rounds.map((round) => round.minRatio)).toFixed(3)),
    accuracyMax: Number(Math.max(...rounds.map((round) => round.maxRatio)).toFixed(3)),
    windowsMeasured: rounds.reduce((sum, round) => sum + round.windows, 0),
    // A reservation that times out (a stalled process on a loaded host) means half-limit local metering for a
    // moment, uncoordinated with the slices already used in that window: accuracy holds only without these.
    sharedFailures: rounds.flatMap((round) => round.stats).reduce((sum, each) => sum + each.sharedFailures, 0),
    sharedFallbackAdmissions: rounds.flatMap((round) => round.stats).reduce((sum, each) => sum + each.sharedFallbackAdmissions, 0),
  };
}

let cluster: PrivateRedisCluster | undefined;
const clusterUrl = process.env.BENCH_REDIS_CLUSTER_URL ?? (cluster = await startPrivateRedisCluster())?.url;
const single: OursRound[] = [];
const onCluster: OursRound[] = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating which goes first, so neither always runs on a warmer (or a busier) machine.
    const clusterFirst = round % 2 === 1;
    if (clusterFirst && clusterUrl) onCluster.push(await runOurs(clusterUrl, `bench:${run}:c${round}:`));
    single.push(await runOurs(REDIS_URL, `bench:${run}:s${round}:`));
    if (!clusterFirst && clusterUrl) onCluster.push(await runOurs(clusterUrl, `bench:${run}:c${round}:`));
  }
} finally {
  await cluster?.dispose();
}
const baseline = await runBaseline();
const ours = summary(single);
const clusterSummary = onCluster.length > 0 ? summary(onCluster) : null;
const result = {
  bench: 'admit-redis',
  ours: ours.perSecond,
  baseline: Math.round(baseline.perSecond),
  ratio: Number((ours.perSecond / baseline.perSecond).toFixed(2)),
  unit: 'admits/s',
  baselineIs: "rate-limiter-flexible's RateLimiterRedis.consume on the same single Redis node (one round trip per call)",
  generator: 'in-process: Governor.admit called directly, 1,000 calls per event-loop turn, two replicas taking alternate batches (no HTTP)',
  loadAverage: loadavg().map((load) => Number(load.toFixed(2))),
  quick: process.env.BENCH_QUICK === '1',
  tenants: TENANTS,
  replicas: 2,
  limitPerWindow: LIMIT,
  rounds: ROUNDS,
  singleNode: ours,
  // The same two Governors on a Redis Cluster (3 masters, 3 replicas on this machine), against the single node.
  cluster: clusterSummary && { ...clusterSummary, ratioToSingleNode: Number((clusterSummary.perSecond / ours.perSecond).toFixed(2)) },
};
console.log(
  `shared Governor.admit on one node ${result.ours.toLocaleString('en-US')}/s (admitted/limit per window ${ours.accuracyMin}..${ours.accuracyMax}); ` +
    (clusterSummary ? `on a cluster ${clusterSummary.perSecond.toLocaleString('en-US')}/s (${clusterSummary.accuracyMin}..${clusterSummary.accuracyMax}); ` : 'no cluster (redis-server missing); ') +
    `RateLimiterRedis.consume ${result.baseline.toLocaleString('en-US')}/s`,
);
console.log(JSON.stringify(result));
