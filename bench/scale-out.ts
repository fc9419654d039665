// Scale-out: admitted ingest requests per second through HAProxy with one replica and with three, in the same
// run. Three compiled replicas (`node bin/governance.js serve`, npm run build) on one PostgreSQL schema and one
// Redis key prefix, as test/e2e/replicas.test.ts runs them (test/support/replicas.ts); two proxies from the
// same generated configuration (test/support/haproxy.ts): one with the first replica alone, one with all
// three. Rounds alternate between the two (bench/support/rounds.ts); each keeps its best round.
//
// Load: wrk (bench/support/load.ts; autocannon where wrk is missing) in a process of its own, pinned to core 1
// with taskset where it is installed (the replicas, the proxy and the databases are left to the scheduler: three
// replicas pinned to one core could not scale out), 32 connections, POST /v1/ingest/bench with 8 readings and a device key,
// the tenant's limits far above the load (every answer 202). The edge per-IP limit is lifted: every request
// comes from one address here, and the bench measures the door and the ledger, not the edge.
//
// The factor is bounded by the cores: every process (the replicas, the proxy, the load generator, PostgreSQL
// and Redis) shares this machine's cores. Each round reports the CPU each replica, the proxy and the load
// generator used (Linux /proc) as cores, and the replicas' CPU per request, so the factor can be read against
// the cores used. The baseline is ourselves: one replica of the same build.
// BENCH_QUICK=1 for a short run on a loaded machine.
// Last line: {"bench":"scale-out","ours":<3 replicas req/s>,"baseline":<1 replica req/s>,"ratio":..,...}
import { cpus } from 'node:os';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate } from '../src/db/migrate.ts';
import { openPostgres, quoteIdent } from '../src/db/postgres.ts';
import { registerIngestCredential } from '../src/auth/ingestKeys.ts';
import { haproxyBinary, startHaproxy, type RunningHaproxy } from '../test/support/haproxy.ts';
import { freePort } from '../test/support/privateServers.ts';
import { compiledServiceMissing, processCpuMicros, startReplica, tcpAnswers, type Replica } from '../test/support/replicas.ts';
import { waitFor } from '../test/support/waitFor.ts';
import { alternateRounds, round2 } from './support/rounds.ts';
import { pinToCore } from './support/benchServer.ts';
import { generatorOf, HTTP_GENERATOR, httpLoad, otherStatuses } from './support/load.ts';
import { operatorMutations } from '../test/support/operatorMutations.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 3;
const SECONDS_PER_ROUND = QUICK ? 4 : 8;
const CONNECTIONS = 32;
const HIGH = 1_000_000;
const JWT_SECRET = 'scale-out-bench-secret-0123456789abcdef0123';
const BODY = JSON.stringify({
  readings: Array.from({ length: 8 }, (_, i) => ({ deviceId: 'pump-7', measurements: { [`m${i}`]: i * 1.5 } })),
});

const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Round {
  requestsPerSecond: number;
  /** The serving replicas' CPU-µs, all together, per request (each request is served by one of them). */
  replicasCpuUsPerRequest: number;
  /** Cores each replica used during the round. */
  replicaCores: Record<string, number>;
  proxyCores: number;
  loadGeneratorCores: number;
  /** Everything measured here: replicas, proxy and load generator (PostgreSQL and Redis are not). */
  coresUsed: number;
}

async function main(): Promise<void> {
  const missing = [
    haproxyBinary() ? undefined : 'haproxy is not installed',
    compiledServiceMissing(),
    (await tcpAnswers(databaseUrl, 5432)) ? undefined : `PostgreSQL does not answer at ${databaseUrl}`,
    (await tcpAnswers(redisUrl, 6379)) ? undefined : `Redis does not answer at ${redisUrl}`,
  ].filter((reason) => reason !== undefined);
  if (missing.length > 0) throw new Error(`scale-out bench cannot run: ${missing.join('; ')}`);

  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const admin = openPostgres({ connectionString: databaseUrl, max: 1 });
  await admin.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
  const replicas: Replica[] = [];
  const proxies: RunningHaproxy[] = [];
  try {
    const db = openPostgres({ connectionString: databaseUrl, schema, max: 1 });
    await migrate(db);
    const registered = await registerIngestCredential(db, { tenantId: 'bench', kind: 'device', subject: 'pump-7' });
    await db.close();
    if (registered.status !== 'registered') throw new Error(registered.message);

    const env = {
      DATABASE_URL: databaseUrl,
      GOVERNANCE_DB_SCHEMA: schema,
      REDIS_URL: redisUrl,
      GOVERNANCE_REDIS_KEY_PREFIX: `gl-bench-${randomBytes(5).toString('hex')}:`,
      NATS_URL: '',
      MQTT_URL: '',
      EVENTSTORE_URL: '',
      GOVERNANCE_JWT_SECRET: JWT_SECRET,
      TRUSTED_PROXY_CIDRS: '127.0.0.1/32',
      EDGE_IP_RATE_PER_SECOND: String(HIGH),
      LOG_LEVEL: 'warn',
    };
    for (const name of ['r1', 'r2', 'r3']) {
      // One after another: three starts at once on two busy cores take longer than three in a row.
      replicas.push(await startReplica({ name, port: await freePort(), grpcPort: await freePort(), env: { ...env, LOG_LEVEL: 'info' } }));
    }
    await waitFor(async () => (await Promise.all(replicas.map((replica) => replica.ready()))).every(Boolean), {
      timeoutMs: 60_000,
      intervalMs: 200,
      description: 'every replica ready',
    });
    const mutate = await operatorMutations(replicas[0]!.baseUrl, JWT_SECRET, 'scale-out-bench');
    await mutate('registerTenant', { tenantId: 'bench' });
    await mutate('setTenantOverride', { tenantId: 'bench', dimension: 'INGEST', ratePerSecond: HIGH, burst: HIGH, reason: 'scale-out bench' });
    await mutate('setTenantOverride', { tenantId: 'bench', dimension: 'API_REQUESTS', ratePerSecond: HIGH, reason: 'scale-out bench' });

    const one = await startHaproxy({ port: await freePort(), servers: [{ name: 'r1', port: replicas[0]!.port }] });
    proxies.push(one);
    const three = await startHaproxy({ port: await freePort(), servers: replicas.map(({ name, port }) => ({ name, port })) });
    proxies.push(three);
    for (const proxy of proxies) {
      await waitFor(async () => [...(await proxy.serverStates()).values()].every((state) => state === 'UP'), {
        timeoutMs: 30_000,
        intervalMs: 100,
        description: 'the proxy to hold its replicas up',
      });
    }

    const measure = async (proxy: RunningHaproxy, serving: readonly Replica[], seconds: number): Promise<Round> => {
      const replicaBefore = serving.map((replica) => replica.cpuMicros());
      const proxyBefore = processCpuMicros(proxy.child.pid!);
      const startedAt = performance.now();
      const result = await httpLoad({
        url: `${proxy.baseUrl}/v1/ingest/bench`,
        connections: CONNECTIONS,
        seconds,
        headers: { 'Content-Type': 'application/json', 'X-Device-Key': registered.key },
        body: BODY,
        script: join(scripts, 'ingest.lua'),
      });
      const wallMicros = (performance.now() - startedAt) * 1000;
      if (otherStatuses(result, 202) !== '' || result.errors > 0) {
        throw new Error(`expected every answer 202, got ${otherStatuses(result, 202)} and ${result.errors} errors`);
      }
      const replicaCpu = serving.map((replica, i) => replica.cpuMicros() - replicaBefore[i]!);
      const proxyCpu = processCpuMicros(proxy.child.pid!) - proxyBefore;
      const selfCpu = result.generatorCpuMicros;
      return {
        requestsPerSecond: result.requestsPerSecond,
        replicasCpuUsPerRequest: round2(replicaCpu.reduce((sum, each) => sum + each, 0) / result.requests),
        replicaCores: Object.fromEntries(serving.map((replica, i) => [replica.name, round2(replicaCpu[i]! / wallMicros)])),
        proxyCores: round2(proxyCpu / wallMicros),
        loadGeneratorCores: round2(selfCpu / wallMicros),
        coresUsed: round2((replicaCpu.reduce((sum, each) => sum + each, 0) + proxyCpu + selfCpu) / wallMicros),
      };
    };

    const pinned = pinToCore(process.pid, 1);
    const scripts = mkdtempSync(join(tmpdir(), 'scale-out-'));
    // Warm-up: every replica learns the tenant's limits and its key, and V8 compiles the hot path.
    await measure(three, replicas, 2);
    const samples = await alternateRounds(ROUNDS, {
      one: () => measure(one, replicas.slice(0, 1), SECONDS_PER_ROUND),
      three: () => measure(three, replicas, SECONDS_PER_ROUND),
    });
    rmSync(scripts, { recursive: true, force: true });
    console.log(`samples: ${JSON.stringify(samples)}`);
    const best = (rounds: Round[]) => rounds.reduce((top, each) => (each.requestsPerSecond > top.requestsPerSecond ? each : top));
    const bestOne = best(samples.one);
    const bestThree = best(samples.three);
    console.log(`1 replica : ${JSON.stringify(bestOne)}`);
    console.log(`3 replicas: ${JSON.stringify(bestThree)}`);
    console.log(
      JSON.stringify({
        bench: 'scale-out',
        ours: round2(bestThree.requestsPerSecond),
        baseline: round2(bestOne.requestsPerSecond),
        ratio: round2(bestThree.requestsPerSecond / bestOne.requestsPerSecond),
        unit: 'admitted requests/s through HAProxy, 3 replicas vs 1',
        baselineIs: 'ourselves: one replica of the same build behind the same HAProxy',
        generator: generatorOf(HTTP_GENERATOR, false, `1 thread, ${CONNECTIONS} connections`).replace('unpinned', pinned ? 'pinned to core 1 with taskset; replicas, proxy and databases unpinned' : 'unpinned'),
        pinned,
        // Where accepted readings went: the counting sink counts them and drops them (no NATS_URL), so the rate
        // excludes delivery to JetStream.
        sink: 'counting',
        // The machine's cores, not availableParallelism(): that counts the cores this process is pinned to.
        cores: cpus().length,
        coresUsedOne: bestOne.coresUsed,
        coresUsedThree: bestThree.coresUsed,
        replicasCpuUsPerRequestOne: bestOne.replicasCpuUsPerRequest,
        replicasCpuUsPerRequestThree: bestThree.replicasCpuUsPerRequest,
        replicaCoresOne: bestOne.replicaCores,
        replicaCoresThree: bestThree.replicaCores,
        proxyCoresOne: bestOne.proxyCores,
        proxyCoresThree: bestThree.proxyCores,
        loadGeneratorCoresOne: bestOne.loadGeneratorCores,
        loadGeneratorCoresThree: bestThree.loadGeneratorCores,
      }),
    );
  } finally {
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    await Promise.all(replicas.map((replica) => replica.dispose()));
    await admin.query(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`).catch(() => {});
    await admin.close();
  }
}

await main();
