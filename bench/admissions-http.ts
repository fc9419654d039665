// The admission API (POST /v1/admissions, batches of 100 items) against a bare node:http handler that reads,
// parses and answers the same JSON (one decision object per item), in the same run. Servers run in a child
// process pinned to core 0, the load generator (wrk, bench/support/load.ts; autocannon where wrk is missing) in
// a process of its own pinned to core 1; targets alternate over several rounds and each keeps its best round,
// because the machine is shared. Each server's CPU-µs per decision and per request is reported beside the
// rates. BENCH_QUICK=1: 2 rounds of 2 s.
//   ours     = every step of the door: bearer token (remembered), item checks, Governor.admit per item, answer
//   baseline = read body, JSON.parse, JSON.stringify of 100 decisions, 200
// Target: ours >= 0.7 x baseline decisions/s.
// Last line: {"bench":"admissions-http","ours":..,"baseline":..,"ratio":..,"unit":"decisions/s",...}
import { createServer as createBareServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { mintToken } from '../src/auth/token.ts';
import { createTokenVerifier } from '../src/auth/verifyToken.ts';
import { createAdmissionRoutes } from '../src/doors/admissions/admissionRoutes.ts';
import { createServiceCallers } from '../src/doors/admissions/serviceCallers.ts';
import type { TenantGovernanceRecord } from '../src/governance/index.ts';
import { createServer, listen } from '../src/http-server/server.ts';
import { answerCpuQueries, governorOver, pinToCore, startBenchServer } from './support/benchServer.ts';
import { generatorOf, HTTP_GENERATOR, httpLoad, otherStatuses } from './support/load.ts';
import { alternateRounds, bestOf, leastOf, round2 } from './support/rounds.ts';

const ITEMS_PER_BATCH = 100;
const TENANTS = 100;
const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 3;
const SECONDS_PER_RUN = QUICK ? 2 : 3;
const CONNECTIONS = 16;
const SECRET = 'bench-secret-0123456789abcdef0123456789';
const DIMENSIONS = [
  { dimension: 'EGRESS', allowance: 'CONNECTORS' },
  { dimension: 'AI_INFERENCE' },
  { dimension: 'PROVISIONING' },
  { dimension: 'API_REQUESTS' },
] as const;
const BODY = JSON.stringify({
  items: Array.from({ length: ITEMS_PER_BATCH }, (_, i) => ({ tenantId: `bench-${i % TENANTS}`, ...DIMENSIONS[i % DIMENSIONS.length], units: 1 })),
});

interface Ports {
  door: number;
  bare: number;
  token: string;
}

if (process.argv[2] === 'serve') await serve();
else await measure();

async function serve(): Promise<void> {
  const high = { ratePerSecond: 1_000_000, burst: 1_000_000 };
  const records = new Map<string, TenantGovernanceRecord>(
    Array.from({ length: TENANTS }, (_, i) => {
      const tenantId = `bench-${i}`;
      const levels = { EGRESS: { override: high }, AI_INFERENCE: { override: high }, PROVISIONING: { override: high }, API_REQUESTS: { override: { ratePerSecond: 1_000_000 } } };
      return [tenantId, { tenantId, tierId: null, levels }] as const;
    }),
  );
  const governor = governorOver(records);
  const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
  const routes = createAdmissionRoutes({
    governor,
    inferenceSpend: { record: () => ({ status: 'recorded' }) },
    callers: createServiceCallers(createTokenVerifier({ secret: SECRET })),
  });
  const door = await listen(createServer({ logger, readiness: [] }, routes), 0, '127.0.0.1');
  const bareServer = createBareServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { items: unknown[] };
      const decisions = parsed.items.map(() => ({
        admitted: true,
        behaviour: 'ADMIT',
        limit: 1_000_000,
        remaining: 999_999,
        retryAfterSeconds: 0,
        scope: 'tenant',
        source: 'TENANT_OVERRIDE',
      }));
      const text = JSON.stringify({ decisions });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
    });
  });
  const bare = await listen(bareServer, 0, '127.0.0.1');
  answerCpuQueries();
  const token = await mintToken({ secret: SECRET, role: 'SERVICE', ttl: 3600 });
  process.send!({ door: door.port, bare: bare.port, token } satisfies Ports);
  process.on('disconnect', () => {
    void governor.close().finally(() => process.exit(0));
  });
}

async function measure(): Promise<void> {
  const { child, ports, serverCpuMicros } = await startBenchServer<Ports>(fileURLToPath(import.meta.url));
  const pinned = pinToCore(process.pid, 1) && pinToCore(child.pid!, 0);
  const scripts = mkdtempSync(join(tmpdir(), 'admissions-http-'));
  const run = async (port: number, seconds = SECONDS_PER_RUN) => {
    const cpuBefore = await serverCpuMicros();
    const result = await httpLoad({
      url: `http://127.0.0.1:${port}/v1/admissions`,
      body: BODY,
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${ports.token}` },
      connections: CONNECTIONS,
      seconds,
      script: join(scripts, `${port}.lua`),
    });
    if (result.errors > 0 || otherStatuses(result, 200) !== '') {
      throw new Error(`expected 200, got ${otherStatuses(result, 200)}, ${result.errors} errors`);
    }
    const cpuMicros = (await serverCpuMicros()) - cpuBefore;
    return {
      decisionsPerSecond: result.requestsPerSecond * ITEMS_PER_BATCH,
      cpuMicrosPerDecision: cpuMicros / (result.requests * ITEMS_PER_BATCH),
      cpuMicrosPerRequest: cpuMicros / result.requests,
    };
  };
  // Warm up: the Governor learns the tenants' ceilings, V8 compiles the hot paths.
  await run(ports.door, 2);
  await run(ports.bare, 1);
  const samples = await alternateRounds(ROUNDS, { baseline: () => run(ports.bare), ours: () => run(ports.door) });
  child.disconnect();
  rmSync(scripts, { recursive: true, force: true });
  const best = (values: typeof samples.ours) => bestOf(values, (each) => each.decisionsPerSecond);
  const leastCpu = (values: typeof samples.ours) => leastOf(values, (each) => each.cpuMicrosPerDecision);
  const ours = best(samples.ours);
  const baseline = best(samples.baseline);
  console.log(`samples: ${JSON.stringify(samples)}`);
  console.log(
    JSON.stringify({
      bench: 'admissions-http',
      ours: Math.round(ours),
      baseline: Math.round(baseline),
      ratio: round2(ours / baseline),
      unit: 'decisions/s',
      baselineIs: 'a bare minimum: node:http reading the body, JSON.parse, one constant decision per item, 200 (no token, no limits)',
      generator: generatorOf(HTTP_GENERATOR, pinned, `1 thread, ${CONNECTIONS} connections`),
      pinned,
      serverCpuMicrosPerDecision: { ours: round2(leastCpu(samples.ours)), baseline: round2(leastCpu(samples.baseline)) },
      serverCpuMicrosPerRequest: {
        ours: round2(leastOf(samples.ours, (each) => each.cpuMicrosPerRequest)),
        baseline: round2(leastOf(samples.baseline, (each) => each.cpuMicrosPerRequest)),
      },
      itemsPerBatch: ITEMS_PER_BATCH,
      connections: CONNECTIONS,
      secondsPerRun: SECONDS_PER_RUN,
      rounds: ROUNDS,
      quick: QUICK,
      targets: { ratio: 0.7 },
    }),
  );
}
