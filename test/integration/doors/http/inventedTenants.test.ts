// 1,000,000 requests naming invented tenants leave memory bounded and the overflow gauge set.
//
// A million real HTTP requests take minutes on the two cores CI has, so the million drive the very handler
// the listener serves, in process, with minimal request and response objects (headers, a socket address, a
// body emitted as the handler reads it); a few thousand more go over real HTTP to a listening server and
// must leave the same bounded state. Each request carries readings and no device key: it is admitted on a
// name, charged, decoded, and answered 401, which is the path an attacker inventing names takes.
import { EventEmitter } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { Governor } from '../../../../src/governance/index.ts';
import { createCountingSink } from '../../../../src/doors/pipeline/countingSink.ts';
import { createEdgeLimit } from '../../../../src/doors/pipeline/edgeLimit.ts';
import type { FrontDoorDeps } from '../../../../src/doors/http/frontDoorDeps.ts';
import { createIngestRoutes } from '../../../../src/doors/http/routes.ts';
import { parseTrustedProxies } from '../../../../src/http-server/trustedProxies.ts';
import { createMetrics } from '../../../../src/metrics/metrics.ts';
import { createServer, listen } from '../../../../src/http-server/server.ts';
import { TableLimitSource } from './frontDoorHarness.ts';

const MAX_UNCONFIRMED = 1024;
const CONFIRMED = ['acme', 'globex', 'initech'];
// A full collection before each heap reading, so growth means retained state, not garbage not yet collected.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
const heapUsedMb = () => {
  collectGarbage();
  return process.memoryUsage().heapUsed / 2 ** 20;
};

const BODY = Buffer.from(JSON.stringify({ readings: [{ measurements: { temperature: 21.5, pressure: 1.2 } }] }));

class InProcessRequest extends EventEmitter {
  readonly method = 'POST';
  readonly socket = { remoteAddress: '203.0.113.7' };
  readonly headers = { 'content-type': 'application/json', 'content-length': String(BODY.length) };
}

/** One request and one response object are reused, so the loop measures the front door, not the fixture. */
class InProcessResponse {
  statusCode = 0;
  writeHead(status: number): this {
    this.statusCode = status;
    return this;
  }
  end(): void {}
}

/** What the server would answer 500: here a fault fails the test where it happens. */
const failOnFault = (_res: ServerResponse, error: unknown) => {
  throw error;
};

describe('invented tenant names', () => {
  const limits = new TableLimitSource();
  for (const tenant of CONFIRMED) limits.tenant(tenant, {});
  const governor = new Governor({ limitSource: limits, maxUnconfirmedNames: MAX_UNCONFIRMED });
  const metrics = createMetrics({ service: 'governance', processMetrics: false });
  metrics.useSources({ nameOverflowInUse: () => governor.overflowInUse });
  const deps: FrontDoorDeps = {
    governor,
    edgeLimit: createEdgeLimit({ ratePerSecond: 1_000_000, burst: 1_000_000 }),
    trustedProxies: parseTrustedProxies([]),
    findCredential: () => Promise.reject(new Error('no request here carries a key')),
    sink: createCountingSink(),
    logger: pino({ level: 'info' }, pino.destination('/dev/null')),
  };
  const ingest = createIngestRoutes(deps)[0]!;
  afterAll(() => governor.close());

  const overflowGauge = async () => {
    const text = await metrics.registry.metrics();
    return /devicechain_governance_governance_name_overflow_in_use (\d)/.exec(text)?.[1];
  };

  // Minutes of wall time only when the machine is shared with much else; a few seconds of CPU otherwise.
  it('a million in process: state stays within confirmed + 1024 + 1, heap growth is small, the overflow gauge is 1', { timeout: 240_000 }, async () => {
    for (const tenant of CONFIRMED) governor.confirmTenant(tenant);
    expect(await overflowGauge()).toBe('0');
    const heapBeforeMb = heapUsedMb();
    const cpuBefore = process.cpuUsage();
    const statuses = new Map<number, number>();
    let maxStates = 0;
    const req = new InProcessRequest();
    const res = new InProcessResponse();
    for (let i = 0; i < 1_000_000; i++) {
      res.statusCode = 0;
      const url = { pathname: `/v1/ingest/invented-${i}` } as URL;
      const handled = ingest.handle(req as unknown as IncomingMessage, res as unknown as ServerResponse, url, failOnFault);
      req.emit('data', BODY);
      req.emit('end');
      await handled;
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      if ((i & 4095) === 0) maxStates = Math.max(maxStates, governor.stats().tenantStates);
    }
    const stats = governor.stats();
    maxStates = Math.max(maxStates, stats.tenantStates);
    const cpu = process.cpuUsage(cpuBefore);
    const heapGrowthMb = heapUsedMb() - heapBeforeMb;
    console.log(
      `1,000,000 invented names: statuses ${JSON.stringify([...statuses])}, heap growth ${heapGrowthMb.toFixed(1)} MB, ` +
        `CPU ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s, stats ${JSON.stringify(stats)}`,
    );

    expect(maxStates).toBeLessThanOrEqual(CONFIRMED.length + MAX_UNCONFIRMED + 1);
    expect(stats.unconfirmedNames).toBeLessThanOrEqual(MAX_UNCONFIRMED);
    expect(stats.overflowInUse).toBe(true);
    expect(await overflowGauge()).toBe('1');
    // Names past the set share one allowance at the platform default (1000/s, burst 2000): most are refused.
    expect(statuses.get(429)).toBeGreaterThan(900_000);
    expect((statuses.get(401) ?? 0) + (statuses.get(429) ?? 0)).toBe(1_000_000);
    // Bounded state: a million names would take hundreds of megabytes if each kept state.
    expect(heapGrowthMb).toBeLessThan(16);
  });

  it('a few thousand more over real HTTP leave the same bound', async () => {
    const server = createServer({ logger: deps.logger, readiness: [] }, createIngestRoutes(deps));
    const { port } = await listen(server, 0, '127.0.0.1');
    try {
      const statuses = new Map<number, number>();
      const send = (i: number) =>
        fetch(`http://127.0.0.1:${port}/v1/ingest/http-invented-${i}`, { method: 'POST', body: BODY, headers: { 'content-type': 'application/json' } }).then(
          async (response) => {
            await response.arrayBuffer();
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          },
        );
      for (let i = 0; i < 2000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => send(i + j)));
      expect([...statuses.keys()].every((status) => status === 401 || status === 429)).toBe(true);
      expect(governor.stats().tenantStates).toBeLessThanOrEqual(CONFIRMED.length + MAX_UNCONFIRMED + 1);
      expect(await overflowGauge()).toBe('1');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
