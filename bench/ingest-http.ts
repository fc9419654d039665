// HTTP ingest front door against a bare node:http handler that reads and parses the same JSON body, in the
// same run. Servers run in a child process pinned to core 0, the load generator (wrk, bench/support/load.ts;
// autocannon where wrk is missing) in a process of its own pinned to core 1; targets alternate over several
// rounds and each keeps its best round, because the machine is shared. Each target's server CPU-µs per request
// is reported beside its rate. BENCH_QUICK=1: 2 rounds of 2 s.
//   ours      = POST /v1/ingest/bench: every check of the front door, admitted, counting sink (202)
//   shed      = POST /v1/ingest/shed: a tenant over its limit, refused at the per-message charge (429)
//   baseline  = bare handler: read body, JSON.parse, 202
// Targets: ours >= 0.7 x baseline requests/s; shed >= ours.
// Last line: {"bench":"ingest-http","ours":..,"baseline":..,"ratio":..,"unit":"requests/s","shed":..,...}
import { createServer as createBareServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { openPglite } from '../src/db/pglite.ts';
import { migrate } from '../src/db/migrate.ts';
import type { TenantGovernanceRecord } from '../src/governance/index.ts';
import { createCountingSink } from '../src/doors/pipeline/countingSink.ts';
import { cachedCredentialLookup } from '../src/doors/pipeline/credentialCache.ts';
import { findIngestCredential, registerIngestCredential } from '../src/auth/ingestKeys.ts';
import { createEdgeLimit } from '../src/doors/pipeline/edgeLimit.ts';
import { createIngestRoutes } from '../src/doors/http/routes.ts';
import { parseTrustedProxies } from '../src/http-server/trustedProxies.ts';
import { createServer, listen } from '../src/http-server/server.ts';
import { answerCpuQueries, governorOver, pinToCore, startBenchServer } from './support/benchServer.ts';
import { generatorOf, HTTP_GENERATOR, httpLoad, otherStatuses } from './support/load.ts';
import { alternateRounds, bestOf, leastOf, round2 } from './support/rounds.ts';

const READINGS_PER_REQUEST = 8;
const BODY = JSON.stringify({
  readings: Array.from({ length: READINGS_PER_REQUEST }, (_, i) => ({ deviceId: 'pump-7', measurements: { [`m${i}`]: i * 1.5 } })),
});
const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 3;
const SECONDS_PER_RUN = QUICK ? 2 : 3;
const CONNECTIONS = 32;

interface Ports {
  frontDoor: number;
  bare: number;
  key: string;
}

if (process.argv[2] === 'serve') await serve();
else await measure();

async function serve(): Promise<void> {
  const db = await openPglite();
  await migrate(db);
  const registered = await registerIngestCredential(db, { tenantId: 'bench', kind: 'device', subject: 'pump-7' });
  if (registered.status !== 'registered') throw new Error(registered.message);
  const high = { ratePerSecond: 1_000_000, burst: 1_000_000 };
  const records = new Map<string, TenantGovernanceRecord>([
    ['bench', { tenantId: 'bench', tierId: null, levels: { INGEST: { override: high }, API_REQUESTS: { override: { ratePerSecond: 1_000_000 } } } }],
    ['shed', { tenantId: 'shed', tierId: null, levels: { INGEST: { override: { ratePerSecond: 1, burst: 1 } } } }],
  ]);
  const governor = governorOver(records);
  const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
  const routes = createIngestRoutes({
    governor,
    edgeLimit: createEdgeLimit({ ratePerSecond: 1_000_000 }),
    trustedProxies: parseTrustedProxies([]),
    findCredential: cachedCredentialLookup((key) => findIngestCredential(db, key)),
    sink: createCountingSink(),
    logger,
  });
  const frontDoor = await listen(createServer({ logger, readiness: [] }, routes), 0, '127.0.0.1');
  const bareServer: Server = createBareServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { readings: unknown[] };
      const text = JSON.stringify({ accepted: parsed.readings.length });
      res.writeHead(202, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
    });
  });
  const bare = await listen(bareServer, 0, '127.0.0.1');
  answerCpuQueries();
  process.send!({ frontDoor: frontDoor.port, bare: bare.port, key: registered.key } satisfies Ports);
  process.on('disconnect', () => {
    void governor.close().finally(() => process.exit(0));
  });
}

async function measure(): Promise<void> {
  const { child, ports, serverCpuMicros } = await startBenchServer<Ports>(fileURLToPath(import.meta.url));
  const pinned = pinToCore(process.pid, 1) && pinToCore(child.pid!, 0);
  const scripts = mkdtempSync(join(tmpdir(), 'ingest-http-'));
  const run = async (port: number, path: string, headers: Record<string, string>, expectStatus: number, seconds = SECONDS_PER_RUN) => {
    const cpuBefore = await serverCpuMicros();
    const result = await httpLoad({
      url: `http://127.0.0.1:${port}${path}`,
      body: BODY,
      headers: { 'Content-Type': 'application/json', ...headers },
      connections: CONNECTIONS,
      seconds,
      script: join(scripts, `${port}${path.replaceAll('/', '-')}.lua`),
    });
    // The shed tenant's allowance lets one request a second through (202): the rest must be the expected status.
    const expected = result.statuses[String(expectStatus)] ?? 0;
    if (result.errors > 0 || expected < result.requests * 0.99) {
      throw new Error(`${path}: expected ${expectStatus}, got ${otherStatuses(result, expectStatus)}, ${result.errors} errors`);
    }
    const cpuMicrosPerRequest = ((await serverCpuMicros()) - cpuBefore) / result.requests;
    return { requestsPerSecond: result.requestsPerSecond, cpuMicrosPerRequest };
  };
  const device = { 'x-device-key': ports.key };
  // Warm up: the Governor learns both tenants' ceilings, V8 compiles the hot paths.
  await run(ports.frontDoor, '/v1/ingest/bench', device, 202, 2).catch(() => 0);
  await run(ports.frontDoor, '/v1/ingest/shed', device, 429, 1).catch(() => 0);
  const samples = await alternateRounds(ROUNDS, {
    baseline: () => run(ports.bare, '/v1/ingest/bench', {}, 202),
    ours: () => run(ports.frontDoor, '/v1/ingest/bench', device, 202),
    shed: () => run(ports.frontDoor, '/v1/ingest/shed', device, 429),
  });
  child.disconnect();
  rmSync(scripts, { recursive: true, force: true });
  const best = (values: typeof samples.ours) => bestOf(values, (each) => each.requestsPerSecond);
  const leastCpu = (values: typeof samples.ours) => leastOf(values, (each) => each.cpuMicrosPerRequest);
  const ours = best(samples.ours);
  const baseline = best(samples.baseline);
  const shed = best(samples.shed);
  console.log(`samples: ${JSON.stringify(samples)}`);
  console.log(
    JSON.stringify({
      bench: 'ingest-http',
      ours: Math.round(ours),
      baseline: Math.round(baseline),
      ratio: round2(ours / baseline),
      unit: 'requests/s',
      baselineIs: 'a bare minimum: node:http reading the body, JSON.parse, 202 (no limits, no key check)',
      generator: generatorOf(HTTP_GENERATOR, pinned, `1 thread, ${CONNECTIONS} connections`),
      pinned,
      // Where accepted readings went: the counting sink counts them and drops them (no NATS_URL), so the rate
      // excludes delivery to JetStream.
      sink: 'counting',
      shed: Math.round(shed),
      shedToAdmitted: round2(shed / ours),
      // Server CPU per request is less disturbed by other load on the machine than requests/s.
      serverCpuMicrosPerRequest: {
        ours: round2(leastCpu(samples.ours)),
        baseline: round2(leastCpu(samples.baseline)),
        shed: round2(leastCpu(samples.shed)),
      },
      readingsPerRequest: READINGS_PER_REQUEST,
      connections: CONNECTIONS,
      secondsPerRun: SECONDS_PER_RUN,
      rounds: ROUNDS,
      quick: QUICK,
      targets: { ratio: 0.7, shedToAdmitted: 1 },
    }),
  );
}
