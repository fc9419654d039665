// The HTTP ingest door against the stacks a user would otherwise build it from, side by side in one run:
//   ours     = POST /v1/ingest/:tenant, the real route with every step (edge limit, tenant name, message
//              charge, size cap, decode, readings charge, device key, API_REQUESTS, counting sink; the
//              Governor's tallies go to a Recorder that discards them, as in bench/ingest-http.ts)
//   fastify  = fastify 5 + @fastify/rate-limit keyed on the tenant in the path
//   express  = express 5 + express.json() + rate-limiter-flexible (RateLimiterMemory) keyed on the tenant
//   bare     = node:http: read the body, JSON.parse, the same reading count, the same key check, 202 (the
//              ceiling; it has no limit, so no refused path)
// Every peer decodes and counts the readings with our decoder (readingsOf) after its own JSON parse, and
// checks the device key as our door does once the key is cached: the key looked up in a Map, then
// authorizeSender (the key's tenant, and every reading naming the key's device). The peers meter one
// limit per request, ours meters the edge, the message, the readings and API_REQUESTS.
//
// Each server runs in a child process of its own, so each one's CPU per request is its own; the load
// generator runs from here, the same one for every server: wrk (C, one thread, 32 connections, the body and
// headers set by a Lua script) when it is installed, else autocannon (BENCH_LOAD=autocannon asks for it).
// autocannon is JavaScript on the same two cores as the servers and parses every header of every answer: it
// needed about as much CPU per request as the servers did, so on two cores it bounded their rates and the
// ratios measured the generator (most of all on the refused path, whose 429 carries our fourteen contract
// headers) more than the servers; wrk needs a fraction of that. Where taskset is installed, every server runs on
// core 0 and the generator (this process, and wrk, which inherits its core) on core 1 (pinToCore: unpinned, one
// server's rate swung twofold from one second to the next). Rounds alternate over the servers, and each
// server keeps its best round (a slow round measures the neighbours on a shared machine). Two paths per server:
//   admitted = tenant "bench", limits far above the load (202)
//   refused  = tenant "shed", 1 request per second, exhausted (429)
// Targets: ours >= 1.0 x fastify admitted, >= 1.2 x fastify refused.
// BENCH_QUICK=1 for a short run on a loaded machine. BENCH_PROFILE=ours (or another server; add :refused for
// that path) loads only that server for 10 s under a V8 CPU profile (node:inspector in the server's process,
// started after the warm-up), writes it to bench/profiles/, and prints the functions with the most self time
// and their share of the server's CPU per request. V8 samples wall time on the server's thread: a thread
// waiting for a core inside a system call counts as that call's time, so on a loaded machine `writev` (the
// answer's send, which wakes the generator) looks far larger than its CPU; `perf record` with node
// --perf-prof measures CPU alone.
// Last line: {"bench":"ingest-peers","admittedVsFastify":..,"refusedVsFastify":..,"oursCpuUsAdmitted":..,...,"loadGenerator":..}
import { createServer as createBareServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import express from 'express';
import Fastify from 'fastify';
import rateLimit from '@fastify/rate-limit';
import { pino } from 'pino';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { openPglite } from '../src/db/pglite.ts';
import { migrate } from '../src/db/migrate.ts';
import type { TenantGovernanceRecord } from '../src/governance/index.ts';
import { authorizeSender } from '../src/doors/pipeline/authorizeSender.ts';
import { createCountingSink } from '../src/doors/pipeline/countingSink.ts';
import { cachedCredentialLookup } from '../src/doors/pipeline/credentialCache.ts';
import { findIngestCredential, registerIngestCredential, type IngestCredential } from '../src/auth/ingestKeys.ts';
import { createEdgeLimit } from '../src/doors/pipeline/edgeLimit.ts';
import { readingsOf, type DecodedReadings } from '../src/doors/pipeline/readings.ts';
import { createIngestRoutes } from '../src/doors/http/routes.ts';
import { parseTrustedProxies } from '../src/http-server/trustedProxies.ts';
import { createServer, listen } from '../src/http-server/server.ts';
import { answerCpuQueries, governorOver, pinToCore, startBenchServer } from './support/benchServer.ts';
import { generatorOf, HTTP_GENERATOR, httpLoad, type LoadResult } from './support/load.ts';

const SERVERS = ['ours', 'fastify', 'express', 'bare'] as const;
type ServerName = (typeof SERVERS)[number];
const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 3;
const SECONDS_PER_RUN = QUICK ? 2 : 3;
const CONNECTIONS = 32;
const READINGS_PER_REQUEST = 8;
const BODY = JSON.stringify({
  readings: Array.from({ length: READINGS_PER_REQUEST }, (_, i) => ({ deviceId: 'pump-7', measurements: { [`m${i}`]: i * 1.5 } })),
});
const HIGH = 1_000_000;
/** The refused tenant's limit, per second, on every server. */
const LOW = 1;
const MAX_BODY_BYTES = 1024 * 1024;

interface Ready {
  port: number;
  key: string;
}

async function serve(name: ServerName): Promise<void> {
  const server = name === 'ours' ? await serveOurs() : name === 'fastify' ? await serveFastify() : name === 'express' ? serveExpress() : serveBare();
  const address = await listen(server.listening, 0, '127.0.0.1');
  answerCpuQueries();
  answerProfileRequests();
  process.send!({ port: address.port, key: server.key } satisfies Ready);
  process.on('disconnect', () => {
    void server.close().finally(() => process.exit(0));
  });
}

interface Served {
  listening: Server;
  key: string;
  close(): Promise<void>;
}

async function serveOurs(): Promise<Served> {
  const db = await openPglite();
  await migrate(db);
  const registered = await registerIngestCredential(db, { tenantId: 'bench', kind: 'device', subject: 'pump-7' });
  if (registered.status !== 'registered') throw new Error(registered.message);
  const records = new Map<string, TenantGovernanceRecord>([
    [
      'bench',
      { tenantId: 'bench', tierId: null, levels: { INGEST: { override: { ratePerSecond: HIGH, burst: HIGH } }, API_REQUESTS: { override: { ratePerSecond: HIGH } } } },
    ],
    ['shed', { tenantId: 'shed', tierId: null, levels: { INGEST: { override: { ratePerSecond: LOW, burst: LOW } } } }],
  ]);
  const governor = governorOver(records);
  const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
  const routes = createIngestRoutes({
    governor,
    edgeLimit: createEdgeLimit({ ratePerSecond: HIGH }),
    trustedProxies: parseTrustedProxies([]),
    findCredential: cachedCredentialLookup((key) => findIngestCredential(db, key)),
    sink: createCountingSink(),
    logger,
    maxBodyBytes: MAX_BODY_BYTES,
  });
  return { listening: createServer({ logger, readiness: [] }, routes), key: registered.key, close: () => governor.close() };
}

// The peers' key store: what our credential cache holds once a key verified (a Map from key to credential).
const PEER_KEY = 'peer-device-key-0123456789abcdefghijklmnopqrstuvwxyz';
const peerCredentials = new Map<string, IngestCredential>([[PEER_KEY, { tenantId: 'bench', kind: 'device', subject: 'pump-7' }]]);

/** The peers' device-key check: our door's, minus the database behind the cache. */
function peerKeyCheck(key: unknown, tenantId: string, decoded: DecodedReadings & { status: 'decoded' }): string | null {
  const credential = typeof key === 'string' ? (peerCredentials.get(key) ?? null) : null;
  const sender = authorizeSender(credential, { route: 'http', tenantId, entries: decoded.entries });
  return sender.status === 'authorized' ? null : sender.message;
}

const limitOf = (tenant: string) => (tenant === 'shed' ? LOW : HIGH);

async function serveFastify(): Promise<Served> {
  const app = Fastify({ logger: false, bodyLimit: MAX_BODY_BYTES });
  await app.register(rateLimit, {
    global: true,
    timeWindow: 1000,
    keyGenerator: (request) => (request.params as { tenant?: string }).tenant ?? '',
    max: (_request, key) => limitOf(key),
  });
  app.post<{ Params: { tenant: string } }>('/v1/ingest/:tenant', async (request, reply) => {
    const decoded = readingsOf(request.body);
    if (decoded.status === 'invalid') return reply.code(400).send({ error: decoded.message });
    const refusal = peerKeyCheck(request.headers['x-device-key'], request.params.tenant, decoded);
    if (refusal !== null) return reply.code(401).send({ error: refusal });
    return reply.code(202).send({ accepted: decoded.readingCount });
  });
  await app.ready();
  return { listening: app.server, key: PEER_KEY, close: () => app.close() };
}

function serveExpress(): Served {
  const limiters = new Map<string, RateLimiterMemory>([
    ['bench', new RateLimiterMemory({ points: HIGH, duration: 1 })],
    ['shed', new RateLimiterMemory({ points: LOW, duration: 1 })],
  ]);
  const app = express();
  app.post(
    '/v1/ingest/:tenant',
    (req, res, next) => {
      const tenant = req.params.tenant ?? '';
      const limiter = limiters.get(tenant);
      if (limiter === undefined) {
        res.status(404).json({ error: 'no such tenant' });
        return;
      }
      limiter.consume(tenant).then(
        () => next(),
        (refusal: unknown) => {
          if (!(refusal instanceof RateLimiterRes)) return next(refusal);
          res
            .status(429)
            .set({
              'Retry-After': String(Math.max(1, Math.ceil(refusal.msBeforeNext / 1000))),
              'X-RateLimit-Limit': String(limitOf(tenant)),
              'X-RateLimit-Remaining': String(refusal.remainingPoints),
            })
            .json({ error: 'rate limited' });
        },
      );
    },
    express.json({ limit: MAX_BODY_BYTES }),
    (req, res) => {
      const decoded = readingsOf(req.body);
      if (decoded.status === 'invalid') {
        res.status(400).json({ error: decoded.message });
        return;
      }
      const refusal = peerKeyCheck(req.get('x-device-key'), req.params.tenant!, decoded);
      if (refusal !== null) {
        res.status(401).json({ error: refusal });
        return;
      }
      res.status(202).json({ accepted: decoded.readingCount });
    },
  );
  const listening = createBareServer(app);
  return { listening, key: PEER_KEY, close: async () => {} };
}

/** The ceiling: no limit at all, the same parse, count and key check. */
function serveBare(): Served {
  const answer = (res: ServerResponse, status: number, body: object) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }).end(text);
  };
  const listening = createBareServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let document: unknown;
      try {
        document = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return answer(res, 400, { error: 'the body is not valid JSON' });
      }
      const decoded = readingsOf(document);
      if (decoded.status === 'invalid') return answer(res, 400, { error: decoded.message });
      const tenant = (req.url ?? '').slice('/v1/ingest/'.length);
      const refusal = peerKeyCheck(req.headers['x-device-key'], tenant, decoded);
      if (refusal !== null) return answer(res, 401, { error: refusal });
      answer(res, 202, { accepted: decoded.readingCount });
    });
  });
  return { listening, key: PEER_KEY, close: async () => {} };
}

interface Sample {
  requestsPerSecond: number;
  cpuMicrosPerRequest: number;
  /** Answers by exact HTTP status: the refused rate counts 429s, never any non-2xx. */
  statuses: Record<string, number>;
}

type LoadPath = 'admitted' | 'refused';

async function measure(): Promise<void> {
  const [profiled, profiledPath = 'admitted'] = (process.env.BENCH_PROFILE ?? '').split(':') as [ServerName | '', LoadPath?];
  const file = fileURLToPath(import.meta.url);
  const servers = new Map<ServerName, Awaited<ReturnType<typeof startBenchServer<Ready>>>>();
  // One after another: each child compiles its own sources, which is heavy work for a loaded machine.
  for (const name of profiled === '' ? SERVERS : [profiled]) servers.set(name, await startBenchServer<Ready>(file, [name]));
  const pinned = pinToCore(process.pid, 1) && [...servers.values()].every((server) => pinToCore(server.child.pid!, 0));
  const scripts = mkdtempSync(join(tmpdir(), 'ingest-peers-'));
  const run = async (name: ServerName, path: LoadPath, seconds = SECONDS_PER_RUN): Promise<Sample> => {
    const server = servers.get(name)!;
    const target: LoadTarget = {
      url: `http://127.0.0.1:${server.ports.port}/v1/ingest/${path === 'admitted' ? 'bench' : 'shed'}`,
      key: server.ports.key,
      expectStatus: path === 'admitted' ? 202 : 429,
      script: join(scripts, `${name}.lua`),
    };
    const cpuBefore = await server.serverCpuMicros();
    const result = await httpLoad({
      url: target.url,
      body: BODY,
      headers: { 'Content-Type': 'application/json', 'X-Device-Key': target.key },
      connections: CONNECTIONS,
      seconds,
      script: target.script,
    });
    const cpuMicros = (await server.serverCpuMicros()) - cpuBefore;
    const unexpected = unexpectedAnswers(name, path, result, seconds);
    if (result.errors > 0 || unexpected !== undefined) {
      throw new Error(`${name} ${path}: expected ${target.expectStatus} of ${result.requests}, got ${JSON.stringify(result.statuses)}, ${result.errors} errors${unexpected ? `: ${unexpected}` : ''}`);
    }
    return { requestsPerSecond: result.requestsPerSecond, cpuMicrosPerRequest: cpuMicros / result.requests, statuses: result.statuses };
  };
  // Each server's exact answer on each path is also checked by requests of its own before the runs. The refused tenant's allowance refills while nothing is sent (one a
  // second), so the first of a few requests in a row may be admitted on it (ours: its readings then never
  // fit, 413); the last must be refused.
  const checkStatus = async (name: ServerName, path: LoadPath) => {
    const server = servers.get(name)!;
    const expectStatus = path === 'admitted' ? 202 : 429;
    let status = 0;
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`http://127.0.0.1:${server.ports.port}/v1/ingest/${path === 'admitted' ? 'bench' : 'shed'}`, {
        method: 'POST',
        body: BODY,
        headers: { 'content-type': 'application/json', 'x-device-key': server.ports.key },
      });
      await response.arrayBuffer();
      status = response.status;
    }
    if (status !== expectStatus) throw new Error(`${name} ${path}: expected ${expectStatus}, got ${status}`);
  };
  if (profiled !== '') {
    const server = servers.get(profiled)!;
    const ask = (message: ProfileMessage) =>
      new Promise<void>((resolve) => {
        server.child.once('message', () => resolve());
        server.child.send(message);
      });
    await run(profiled, profiledPath, 2).catch(() => undefined);
    const profileFile = fileURLToPath(new URL(`./profiles/${profiled}-${profiledPath}-${Date.now()}.cpuprofile`, import.meta.url));
    mkdirSync(dirname(profileFile), { recursive: true });
    await ask({ profile: 'start' });
    const sample = await run(profiled, profiledPath, 10);
    await ask({ profile: 'stop', file: profileFile });
    server.child.disconnect();
    rmSync(scripts, { recursive: true, force: true });
    console.log(`${profiled} ${profiledPath}: ${JSON.stringify(sample)}; profile in ${profileFile}`);
    printTopSelfTime(profileFile, sample.cpuMicrosPerRequest);
    return;
  }
  // Warm up: V8 compiles the hot paths, our Governor learns both tenants' limits.
  for (const name of SERVERS) {
    await run(name, 'admitted', 1).catch(() => undefined);
    if (name !== 'bare') await run(name, 'refused', 1).catch(() => undefined);
  }
  for (const name of SERVERS) {
    await checkStatus(name, 'admitted');
    if (name !== 'bare') await checkStatus(name, 'refused');
  }
  const samples = Object.fromEntries(SERVERS.map((name) => [name, { admitted: [] as Sample[], refused: [] as Sample[] }])) as Record<
    ServerName,
    { admitted: Sample[]; refused: Sample[] }
  >;
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts with the next server, so no server always follows the same neighbour.
    for (let i = 0; i < SERVERS.length; i++) {
      const name = SERVERS[(round + i) % SERVERS.length]!;
      samples[name].admitted.push(await run(name, 'admitted'));
      // The ceiling has no limit to refuse with.
      if (name !== 'bare') samples[name].refused.push(await run(name, 'refused'));
    }
  }
  for (const server of servers.values()) server.child.disconnect();
  await Promise.all([...servers.values()].map((server) => new Promise((resolve) => server.child.once('exit', resolve))));
  rmSync(scripts, { recursive: true, force: true });

  const round2 = (value: number) => Math.round(value * 100) / 100;
  // The bare handler has no refused path: its figures there are 0.
  const best = (name: ServerName, path: LoadPath) => Math.max(0, ...samples[name][path].map((each) => each.requestsPerSecond));
  const leastCpu = (name: ServerName, path: LoadPath) =>
    samples[name][path].length === 0 ? 0 : Math.min(...samples[name][path].map((each) => each.cpuMicrosPerRequest));
  const table = Object.fromEntries(
    SERVERS.map((name) => [
      name,
      {
        admitted: Math.round(best(name, 'admitted')),
        refused: Math.round(best(name, 'refused')),
        cpuUsAdmitted: round2(leastCpu(name, 'admitted')),
        cpuUsRefused: round2(leastCpu(name, 'refused')),
      },
    ]),
  ) as Record<ServerName, { admitted: number; refused: number; cpuUsAdmitted: number; cpuUsRefused: number }>;
  console.log(`samples: ${JSON.stringify(samples)}`);
  for (const name of SERVERS) console.log(`${name.padEnd(8)} ${JSON.stringify(table[name])}`);
  const ours = table.ours;
  console.log(
    JSON.stringify({
      bench: 'ingest-peers',
      // Where accepted readings went: the counting sink counts them and drops them (no NATS_URL), so the rate
      // excludes delivery to JetStream.
      sink: 'counting',
      admittedVsFastify: round2(ours.admitted / table.fastify.admitted),
      refusedVsFastify: round2(ours.refused / table.fastify.refused),
      admittedVsExpress: round2(ours.admitted / table.express.admitted),
      refusedVsExpress: round2(ours.refused / table.express.refused),
      admittedVsBare: round2(ours.admitted / table.bare.admitted),
      oursCpuUsAdmitted: ours.cpuUsAdmitted,
      oursCpuUsRefused: ours.cpuUsRefused,
      fastifyCpuUsAdmitted: table.fastify.cpuUsAdmitted,
      fastifyCpuUsRefused: table.fastify.cpuUsRefused,
      expressCpuUsAdmitted: table.express.cpuUsAdmitted,
      expressCpuUsRefused: table.express.cpuUsRefused,
      bareCpuUsAdmitted: table.bare.cpuUsAdmitted,
      requestsPerSecond: Object.fromEntries(SERVERS.map((name) => [name, { admitted: table[name].admitted, refused: table[name].refused }])),
      unit: 'requests/s',
      readingsPerRequest: READINGS_PER_REQUEST,
      connections: CONNECTIONS,
      secondsPerRun: SECONDS_PER_RUN,
      rounds: ROUNDS,
      quick: QUICK,
      loadGenerator: HTTP_GENERATOR,
      pinned,
      baselineIs: 'peers: fastify 5 + @fastify/rate-limit (the ratios), express 5 + rate-limiter-flexible, and a bare node:http handler without limits (the ceiling)',
      generator: generatorOf(HTTP_GENERATOR, pinned, `1 thread, ${CONNECTIONS} connections`),
      targets: { admittedVsFastify: 1, refusedVsFastify: 1.2 },
    }),
  );
}

interface LoadTarget {
  url: string;
  key: string;
  expectStatus: number;
  /** Where wrk's Lua script for this server goes. */
  script: string;
}

/**
 * Why a run's answers are not what its path measures (undefined when they are). The admitted path must answer
 * 202 every time: its tenant has no limit that could refuse. The refused path must answer 429, except for what
 * the refused tenant's allowance lets through while the run lasts: LOW a second plus its burst of one, and a
 * second of slack for a run that spans one more refill than its whole seconds; a request let through is
 * admitted (202) or, on ours, refused for readings that never fit (413); on a peer, which checks the device key
 * after its limit, refused for the key (401: the one key every server is given is the admitted tenant's, so a
 * request let through on the refused tenant fails its check). Any other status (a 400, a 401 on ours, 5xx) is a
 * fault, never counted as the expected 429.
 */
function unexpectedAnswers(name: ServerName, path: LoadPath, result: LoadResult, seconds: number): string | undefined {
  const expectStatus = path === 'admitted' ? '202' : '429';
  const letThrough = path === 'admitted' ? 0 : LOW * (Math.ceil(seconds) + 1) + 1;
  const others = Object.entries(result.statuses).filter(([status]) => status !== expectStatus);
  const letThroughStatuses = name === 'ours' ? ['202', '413'] : ['202', '413', '401'];
  const faults = others.filter(([status]) => path === 'admitted' || !letThroughStatuses.includes(status));
  if (faults.length > 0) return `statuses other than ${expectStatus}: ${faults.map(([status, count]) => `${count} x ${status}`).join(', ')}`;
  const through = others.reduce((sum, [, count]) => sum + count, 0);
  if (through > letThrough) return `${through} answers other than ${expectStatus}, more than the ${letThrough} the refused tenant's allowance lets through`;
  return undefined;
}

type ProfileMessage = { profile: 'start' } | { profile: 'stop'; file: string };

/** Child side: profiles this process's CPU between a 'start' and a 'stop' (the load alone, not the start-up). */
function answerProfileRequests(): void {
  const session = new Session();
  session.connect();
  process.on('message', (message: ProfileMessage | string) => {
    if (typeof message !== 'object' || !('profile' in message)) return;
    if (message.profile === 'start') {
      session.post('Profiler.enable', () =>
        session.post('Profiler.setSamplingInterval', { interval: 100 }, () => session.post('Profiler.start', () => process.send!({ profiling: true }))),
      );
      return;
    }
    session.post('Profiler.stop', (error, result) => {
      if (error === null) writeFileSync(message.file, JSON.stringify(result.profile));
      process.send!({ profiled: error === null });
    });
  });
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** The functions with the most self time under load, each as a share of the busy samples and as µs per request. */
function printTopSelfTime(profileFile: string, cpuMicrosPerRequest: number, top = 30): void {
  const profile = JSON.parse(readFileSync(profileFile, 'utf8')) as CpuProfile;
  const nameOf = new Map(
    profile.nodes.map((node) => {
      const { functionName, url, lineNumber } = node.callFrame;
      const where = url === '' ? '' : ` ${url.replace(/^.*\/(node_modules|src|bench)\//, '$1/')}:${lineNumber + 1}`;
      return [node.id, `${functionName || '(anonymous)'}${where}`];
    }),
  );
  const selfMicros = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    const name = nameOf.get(id)!;
    selfMicros.set(name, (selfMicros.get(name) ?? 0) + delta);
    total += delta;
  });
  const idle = selfMicros.get('(idle)') ?? 0;
  const busy = total - idle;
  console.log(`top self time (share of busy samples; µs per request at ${cpuMicrosPerRequest.toFixed(1)} CPU-µs per request):`);
  for (const [name, micros] of [...selfMicros].filter(([name]) => name !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, top)) {
    const share = micros / busy;
    console.log(`${(share * 100).toFixed(1).padStart(5)}%  ${(share * cpuMicrosPerRequest).toFixed(1).padStart(6)} µs  ${name}`);
  }
}

// Last, so every constant above is initialised before a server or the measurement starts.
if (process.argv[2] === 'serve') await serve(process.argv[3] as ServerName);
else await measure();
