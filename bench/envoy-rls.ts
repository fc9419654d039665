// Envoy's rate limit service as deployed: ShouldRateLimit calls/s of the compiled service (`npm run build`
// first; `node bin/governance.js serve` on embedded storage, with its ledger, metrics and every door, as
// test/support/replicas.ts starts it) against a grpc-js server built from the same .proto answering a constant
// OK, in the same run. The load is h2load (nghttp2) in a process of its own: gRPC over HTTP/2, 8 connections x
// 32 streams, every call the same framed request (one registered tenant, API_REQUESTS far above the load). Where
// taskset is installed both servers run on core 0 and h2load on core 1. h2load does not read gRPC's status
// (it is in the trailers): each server's answer is checked by grpc-js calls before and after the runs, and
// h2load's count of HTTP 2xx answers must equal its calls. Rounds alternate, each server keeps its best round,
// and each server's CPU-µs per call (its own process, Linux /proc) is reported beside the rates.
//   ours     = the service: descriptor mapping, Governor decision with its Recorder (the ledger and metrics), answer
//   baseline = a bare minimum: the same service definition, answering {overall_code: OK} without looking at the request
// Target: ours >= 0.7 x baseline calls/s. BENCH_QUICK=1: 2 rounds of 20,000 calls (else 3 of 100,000).
// Needs h2load (apt-get install nghttp2-client) and the build.
// Last line: {"bench":"envoy-rls","ours":..,"baseline":..,"ratio":..,"unit":"calls/s","serverCpuMicrosPerCall":{..},...}
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadRlsService } from '../src/doors/envoy-rls/rlsServer.ts';
import { freePort } from '../test/support/privateServers.ts';
import { compiledServiceMissing, startReplica, type Replica } from '../test/support/replicas.ts';
import { waitFor } from '../test/support/waitFor.ts';
import { answerCpuQueries, pinToCore, startBenchServer } from './support/benchServer.ts';
import { generatorOf, grpcFrame, grpcLoad, H2LOAD_INSTALLED } from './support/load.ts';
import { alternateRounds, leastOf, round2 } from './support/rounds.ts';
import { operatorMutations } from '../test/support/operatorMutations.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const ROUNDS = QUICK ? 2 : 3;
const CALLS_PER_RUN = QUICK ? 20_000 : 100_000;
const CONNECTIONS = 8;
const STREAMS = 32;
const TENANT = 'rls-bench';
const HIGH = 1_000_000;
const JWT_SECRET = 'envoy-rls-bench-secret-0123456789abcdef01';
const REQUEST = {
  domain: 'devicechain',
  descriptors: [{ entries: [{ key: 'tenant', value: TENANT }, { key: 'caller', value: 'gw-1' }] }],
  hits_addend: 1,
};

interface Ports {
  baseline: number;
}

/** The constant server, in a process of its own. */
async function serve(): Promise<void> {
  const constant = new grpc.Server();
  constant.addService(loadRlsService(), {
    ShouldRateLimit(_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) {
      callback(null, { overall_code: 'OK' });
    },
  });
  const baseline = await new Promise<number>((resolve, reject) =>
    constant.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))),
  );
  answerCpuQueries();
  process.send!({ baseline } satisfies Ports);
  process.on('disconnect', () => {
    constant.forceShutdown();
    process.exit(0);
  });
}

type RlsClient = {
  ShouldRateLimit(request: unknown, callback: (error: grpc.ServiceError | null, response: { overall_code: string }) => void): void;
  close(): void;
};

/** A few calls with grpc-js: every answer must be OK (h2load cannot see gRPC's status). */
async function checkAnswers(port: number, name: string): Promise<void> {
  const Client = grpc.makeGenericClientConstructor(loadRlsService(), 'RateLimitService');
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as RlsClient;
  try {
    for (let i = 0; i < 5; i++) {
      const code = await new Promise<string>((resolve, reject) =>
        client.ShouldRateLimit(REQUEST, (error, response) => (error ? reject(error) : resolve(response.overall_code))),
      );
      if (code !== 'OK') throw new Error(`${name} answered ${code}, not OK`);
    }
  } finally {
    client.close();
  }
}

async function measure(): Promise<void> {
  const missing = [H2LOAD_INSTALLED ? undefined : 'h2load is not installed (apt-get install nghttp2-client)', compiledServiceMissing()].filter(
    (reason) => reason !== undefined,
  );
  if (missing.length > 0) throw new Error(`envoy-rls bench cannot run: ${missing.join('; ')}`);
  const { child, ports, serverCpuMicros } = await startBenchServer<Ports>(fileURLToPath(import.meta.url));
  const grpcPort = await freePort();
  // Embedded storage (no DATABASE_URL), no broker: the service as a single node deploys it.
  const service: Replica = await startReplica({
    name: 'rls',
    port: await freePort(),
    grpcPort,
    env: { DATABASE_URL: '', REDIS_URL: '', NATS_URL: '', MQTT_URL: '', EVENTSTORE_URL: '', GOVERNANCE_JWT_SECRET: JWT_SECRET, LOG_LEVEL: 'info' },
  });
  const scratch = mkdtempSync(join(tmpdir(), 'envoy-rls-'));
  try {
    await waitFor(() => service.ready(), { timeoutMs: 120_000, intervalMs: 200, description: 'the service ready' });
    const mutate = await operatorMutations(service.baseUrl, JWT_SECRET, 'envoy-rls-bench');
    await mutate('registerTenant', { tenantId: TENANT });
    await mutate('setTenantOverride', { tenantId: TENANT, dimension: 'API_REQUESTS', ratePerSecond: HIGH, reason: 'envoy-rls bench' });
    const pinned = pinToCore(process.pid, 1) && pinToCore(child.pid!, 0) && pinToCore(service.child.pid!, 0);

    const method = loadRlsService().ShouldRateLimit!;
    const bodyFile = join(scratch, 'request.grpc');
    writeFileSync(bodyFile, grpcFrame(method.requestSerialize(REQUEST)));
    const targets = {
      ours: { port: grpcPort, cpuMicros: async () => service.cpuMicros() },
      baseline: { port: ports.baseline, cpuMicros: serverCpuMicros },
    };
    // The tenant's limits reach the service's Governor on its next read: wait until it answers OK.
    await waitFor(
      () =>
        checkAnswers(grpcPort, 'ours').then(
          () => true,
          () => false,
        ),
      { timeoutMs: 60_000, intervalMs: 500, description: 'the service to answer OK for the bench tenant' },
    );
    await checkAnswers(ports.baseline, 'baseline');
    const run = async (name: keyof typeof targets, calls = CALLS_PER_RUN) => {
      const target = targets[name];
      const cpuBefore = await target.cpuMicros();
      const result = await grpcLoad({
        url: `http://127.0.0.1:${target.port}${method.path}`,
        bodyFile,
        calls,
        connections: CONNECTIONS,
        streams: STREAMS,
      });
      const cpuMicros = (await target.cpuMicros()) - cpuBefore;
      if (result.failed > 0 || result.answered2xx !== result.calls) {
        throw new Error(`${name}: ${result.failed} of ${result.calls} calls failed, ${result.answered2xx} answered 2xx`);
      }
      return { callsPerSecond: result.callsPerSecond, meanMs: result.meanMs, serverCpuMicrosPerCall: cpuMicros / result.calls };
    };
    // Warm up: V8 compiles both servers' hot paths.
    await run('ours', CALLS_PER_RUN / 5);
    await run('baseline', CALLS_PER_RUN / 5);
    const samples = await alternateRounds(ROUNDS, { baseline: () => run('baseline'), ours: () => run('ours') });
    await checkAnswers(grpcPort, 'ours');
    await checkAnswers(ports.baseline, 'baseline');
    // The best round whole (its latency with its rate), not the best of each figure.
    const best = (values: typeof samples.ours) => values.reduce((a, b) => (b.callsPerSecond > a.callsPerSecond ? b : a));
    const ours = best(samples.ours);
    const baseline = best(samples.baseline);
    console.log(`samples: ${JSON.stringify(samples)}`);
    console.log(
      JSON.stringify({
        bench: 'envoy-rls',
        ours: Math.round(ours.callsPerSecond),
        baseline: Math.round(baseline.callsPerSecond),
        ratio: round2(ours.callsPerSecond / baseline.callsPerSecond),
        unit: 'calls/s',
        baselineIs: 'a bare minimum: a grpc-js server of the same .proto answering a constant OK',
        generator: generatorOf('h2load', pinned, `1 thread, ${CONNECTIONS} connections x ${STREAMS} streams, ${CALLS_PER_RUN} calls a run`),
        pinned,
        oursIs: 'the compiled service (bin/governance.js serve) on embedded storage, with its ledger and metrics',
        meanMs: { ours: round2(ours.meanMs), baseline: round2(baseline.meanMs) },
        // Server CPU per call is less disturbed by other load on the machine than calls/s.
        serverCpuMicrosPerCall: {
          ours: round2(leastOf(samples.ours, (each) => each.serverCpuMicrosPerCall)),
          baseline: round2(leastOf(samples.baseline, (each) => each.serverCpuMicrosPerCall)),
        },
        callsPerRun: CALLS_PER_RUN,
        rounds: ROUNDS,
        quick: QUICK,
        targets: { ratio: 0.7 },
      }),
    );
  } finally {
    child.disconnect();
    await service.dispose();
    rmSync(scratch, { recursive: true, force: true });
  }
}

// Last, so every constant above is initialised first.
if (process.argv[2] === 'serve') await serve();
else await measure();
