// Envoy's rate limit service in the whole service, driven by a grpc-js client built from the project's .proto:
// ShouldRateLimit is decided by the service's Governor on the tenant's configured limits, answered with the
// 429 contract, and recorded in the ledger; a malformed request is INVALID_ARGUMENT; TLS with client
// certificates when configured.
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRlsServer, type RlsServer } from '../../src/doors/envoy-rls/rlsServer.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import { shedTrend } from '../../src/metrics/trends/shedTrend.ts';
import type { Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { encodeRequest, RlsClient } from '../support/rlsClient.ts';
import { serviceModes, startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { admissionSummaryReader } from '../../src/ledger/catalog/summaryRefs.ts';

const mode = serviceModes('e2e_rls').at(-1)!;
const tenant = (id: string, more: Record<string, string> = {}) => ({
  entries: [{ key: 'tenant', value: id }, ...Object.entries(more).map(([key, value]) => ({ key, value }))],
});

describe(`Envoy rate limit service (${mode.name})`, () => {
  let running: RunningService;
  let service: Service;
  let rls: RlsServer;
  let client: RlsClient;

  beforeAll(async () => {
    running = await startServiceIn(mode);
    service = running.service;
    await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' });
    for (const tenantId of ['gw', 'wide']) await service.controlPlane.registerTenant(OPERATOR, { tenantId, tierId: 'standard' });
    await service.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'gw', dimension: 'API_REQUESTS', ratePerSecond: 3, reason: 'rls test' });
    await service.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'gw', dimension: 'PROVISIONING', ratePerSecond: 1, burst: 2, reason: 'rls test' });
    await service.projections.waitForCaughtUp();
    rls = await startRlsServer({ decider: service.rateLimits, port: 0, host: '127.0.0.1', logger: pino({ level: 'silent' }) });
    client = new RlsClient(`127.0.0.1:${rls.port}`);
    // The first call teaches the Governor the tenants' ceilings.
    await client.shouldRateLimit({ domain: 'devicechain', descriptors: [tenant('gw'), tenant('wide'), tenant('gw', { dimension: 'PROVISIONING' })] });
    await service.governor.loadsSettled();
  }, 180_000);

  afterAll(async () => {
    client?.close();
    await rls?.close();
    await running?.stop();
  });

  it('refuses over the tenant limit with the limit that decided and the 429 contract; a gateway limit is ignored', async () => {
    const from = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    const response = await client.shouldRateLimit({
      domain: 'devicechain',
      descriptors: [{ ...tenant('gw'), limit: { requests_per_unit: 1_000_000, unit: 'SECOND' } }],
      hits_addend: 5,
    });
    expect(response.overall_code).toBe('OVER_LIMIT');
    expect(response.statuses).toEqual([
      {
        code: 'OVER_LIMIT',
        current_limit: { requests_per_unit: 3, unit: 'SECOND', name: 'tenant-requests' },
        limit_remaining: expect.any(Number),
        duration_until_reset: { seconds: 1, nanos: 0 },
      },
    ]);
    const headers = Object.fromEntries((response.response_headers_to_add ?? []).map(({ key, value }) => [key, value]));
    expect(headers).toMatchObject({
      'Retry-After': '1',
      'X-RateLimit-Scope': 'tenant',
      'X-RateLimit-Limit': '3',
      'RateLimit-Policy': '"tenant-requests";q=3;w=1',
    });
    expect(headers.RateLimit).toMatch(/^"tenant-requests";r=\d+;t=1$/);

    await service.governor.flush();
    const entries = (await service.store.readStream(ADMISSIONS_STREAM)).flatMap(admissionSummaryReader(),
    );
    const refused = entries.filter((entry) => entry.tenantId === 'gw' && entry.dimension === 'API_REQUESTS').reduce((sum, entry) => sum + entry.rejectedUnits, 0);
    expect(refused).toBeGreaterThanOrEqual(5);
    await service.projections.waitForCaughtUp();
    const trend = await shedTrend(service.db, { tenantId: 'gw', dimension: 'API_REQUESTS', from, to: new Date(Date.now() + 60_000), bucket: 'MINUTE' });
    expect(trend.reduce((sum, point) => sum + point.rejected, 0)).toBeGreaterThanOrEqual(5);
  });

  it('every descriptor must pass; statuses come in the order of the descriptors', async () => {
    const response = await client.shouldRateLimit({
      domain: 'devicechain',
      descriptors: [tenant('wide'), tenant('gw', { dimension: 'PROVISIONING' })],
      hits_addend: 3,
    });
    expect(response.overall_code).toBe('OVER_LIMIT');
    expect(response.statuses!.map((status) => [status.code, status.current_limit!.name, status.current_limit!.requests_per_unit])).toEqual([
      ['OK', 'tenant-requests', 5000],
      ['OVER_LIMIT', 'tenant-registrations', 1],
    ]);
    const ok = await client.shouldRateLimit({ domain: 'devicechain', descriptors: [tenant('wide')] });
    expect(ok).toMatchObject({ overall_code: 'OK', statuses: [{ code: 'OK', limit_remaining: expect.any(Number) }] });
    expect(ok.response_headers_to_add ?? []).toEqual([]);
  });

  it('a descriptor naming no tenant, or another domain, is metered at the platform default, never unlimited', async () => {
    for (const request of [
      { domain: 'devicechain', descriptors: [{ entries: [{ key: 'remote_address', value: '10.0.0.1' }] }] },
      { domain: 'someone-else', descriptors: [tenant('gw')] },
    ]) {
      const response = await client.shouldRateLimit(request);
      expect(response.statuses![0]!.current_limit).toEqual({ requests_per_unit: 5000, unit: 'SECOND', name: 'tenant-requests' });
    }
    const flood = await client.shouldRateLimit({ domain: 'elsewhere', descriptors: [{ entries: [{ key: 'generic_key', value: 'x' }] }], hits_addend: 20_000 });
    expect(flood.overall_code).toBe('OVER_LIMIT');
  });

  it('ignores fields its .proto does not know, as newer gateways send', async () => {
    const known = encodeRequest({ domain: 'devicechain', descriptors: [tenant('wide')] });
    // Field 15 (varint 1) and field 16 (a length-delimited "xyz"), both unknown to this service.
    const bytes = Buffer.concat([known, Buffer.from([0x78, 0x01, 0x82, 0x01, 0x03, 0x78, 0x79, 0x7a])]);
    expect(await client.shouldRateLimitRaw(bytes)).toMatchObject({ overall_code: 'OK' });
  });

  it('answers INVALID_ARGUMENT to a malformed request, and nothing else errors', async () => {
    const malformed = [
      { domain: 'devicechain', descriptors: [] },
      { domain: 'devicechain', descriptors: [{ entries: [] }] },
      { domain: 'devicechain', descriptors: [{ entries: [{ key: '', value: 'x' }] }] },
      { domain: 'devicechain', descriptors: [tenant('gw', { dimension: 'UNDELIVERED_COMMANDS' })] },
      { domain: 'devicechain', descriptors: [tenant('gw', { dimension: 'EGRESS' })] },
      { domain: 'devicechain', descriptors: [tenant('not a tenant!')] },
    ];
    for (const request of malformed) {
      await expect(client.shouldRateLimit(request), JSON.stringify(request)).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    }
    const garbage = Buffer.from([0x0a, 0xff, 0xff, 0xff]);
    await expect(client.shouldRateLimitRaw(garbage)).rejects.toMatchObject({ code: expect.any(Number) });
    // The server still answers after all of that.
    expect(await client.shouldRateLimit({ domain: 'devicechain', descriptors: [tenant('wide')] })).toMatchObject({ overall_code: 'OK' });
  });

  it('speaks TLS and requires client certificates when configured', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gl-rls-tls-'));
    try {
      const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
      openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=test-ca');
      for (const name of ['server', 'client']) {
        openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name === 'server' ? 'localhost' : 'envoy'}`);
        const ext = path.join(dir, `${name}.ext`);
        execFileSync('sh', ['-c', `printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' > ${ext}`]);
        openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', ext);
      }
      const tlsServer = await startRlsServer({
        decider: service.rateLimits,
        port: 0,
        host: '127.0.0.1',
        logger: pino({ level: 'silent' }),
        tls: { certFile: path.join(dir, 'server.crt'), keyFile: path.join(dir, 'server.key'), clientCaFile: path.join(dir, 'ca.crt') },
      });
      const [ca, clientKey, clientCert] = await Promise.all(['ca.crt', 'client.key', 'client.crt'].map((file) => readFile(path.join(dir, file))));
      const withCert = new RlsClient(`localhost:${tlsServer.port}`, grpc.credentials.createSsl(ca!, clientKey!, clientCert!));
      const withoutCert = new RlsClient(`localhost:${tlsServer.port}`, grpc.credentials.createSsl(ca!));
      const plain = new RlsClient(`localhost:${tlsServer.port}`);
      try {
        expect(await withCert.shouldRateLimit({ domain: 'devicechain', descriptors: [tenant('wide')] })).toMatchObject({ overall_code: 'OK' });
        await expect(withoutCert.shouldRateLimit({ domain: 'devicechain', descriptors: [tenant('wide')] }, 3_000)).rejects.toMatchObject({ code: expect.any(Number) });
        await expect(plain.shouldRateLimit({ domain: 'devicechain', descriptors: [tenant('wide')] }, 3_000)).rejects.toMatchObject({ code: expect.any(Number) });
      } finally {
        withCert.close();
        withoutCert.close();
        plain.close();
        await tlsServer.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
