// The service on a PostgreSQL of the suite's own, while that database loses connections and goes away:
// the LISTEN connection comes back by itself and reads once; terminating every backend during traffic answers
// only successes and typed, retryable refusals (HTTP 503 with Retry-After, GraphQL SERVICE_UNAVAILABLE),
// never a 500; /readyz is 503 while the database is stopped and 200 within 5 s of its return; and what the
// Governor admitted meanwhile reaches the ledger exactly once. The database runs durably (fsync on, as in
// production) and crashes once under traffic (SIGKILL of its postmaster): after its recovery every decision and
// every command the service acknowledged is in the ledger exactly once.
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/token.ts';
import { readSettings } from '../../src/config.ts';
import type { Db } from '../../src/db/db.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import { commandsStream } from '../../src/ledger/catalog/commands.ts';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { createServer, listen } from '../../src/http-server/server.ts';
import { startService, type Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../support/privateServers.ts';
import { readWholeLedger } from '../support/readLedger.ts';
import { waitFor } from '../support/waitFor.ts';
import { admissionSummaryReader } from '../../src/ledger/catalog/summaryRefs.ts';

const JWT_SECRET = 'database-outage-suite-secret-0123456789abcdef';
// Durable, so that the crash below may lose only what was never acknowledged.
const pg = await startPrivatePostgres({ durable: true });

describe.skipIf(!pg)('the service while its PostgreSQL loses connections and goes away', () => {
  const postgres = pg as PrivatePostgres;
  let dataDir: string;
  let service: Service;
  let server: Server;
  let baseUrl: string;
  let admin: Db;
  let key: string;
  let token: string;
  /** Readings the ingest door answered 202 for, over the whole suite. */
  let acceptedReadings = 0;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-outage-'));
    service = await startService(
      readSettings({ DATABASE_URL: postgres.url, GOVERNANCE_DATA_DIR: dataDir, GOVERNANCE_JWT_SECRET: JWT_SECRET }),
      pino({ level: 'silent' }),
    );
    server = createServer(service, service.routes);
    baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
    admin = openPostgres({ connectionString: postgres.url, max: 1 });
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'standard' })).toMatchObject({ status: 'applied' });
    for (const dimension of ['INGEST', 'API_REQUESTS'] as const) {
      const limit = dimension === 'INGEST' ? { ratePerSecond: 1_000_000, burst: 1_000_000 } : { ratePerSecond: 1_000_000 };
      expect(
        await service.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension, ...limit, reason: 'outage suite: nothing refused by a limit' }),
      ).toMatchObject({ status: 'applied' });
    }
    await service.projections.waitForCaughtUp();
    const registered = await registerIngestCredential(service.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    key = registered.key;
    token = await mintToken({ secret: JWT_SECRET, role: 'OPERATOR', sub: 'outage-suite', ttl: '10m' });
    // The first post teaches the Governor acme's ceilings and the front door the key.
    expect((await ingest()).status).toBe(202);
    await service.governor.loadsSettled();
  }, 180_000);

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await service?.close();
    await admin?.close();
    await postgres.dispose();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function ingest(): Promise<Response> {
    const response = await fetch(`${baseUrl}/v1/ingest/acme`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-device-key': key },
      body: JSON.stringify({ readings: [{ deviceId: 'pump-1', measurements: { temperature: 21.5, pressure: 1.2 } }] }),
    });
    if (response.status === 202) acceptedReadings += 2;
    return response;
  }

  const graphql = (query: string, variables?: Record<string, unknown>) =>
    fetch(`${baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });

  const listenPids = async () =>
    (await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`)).rows.map(
      (row) => row.pid,
    );
  const terminateAll = () => admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND backend_type = $1', ['client backend']);

  it('a LISTEN whose connection is terminated listens again and reads once', async () => {
    const db = openPostgres({ connectionString: postgres.url, max: 2 });
    const heard: string[] = [];
    try {
      const unlisten = await db.listen('gl_outage_suite', (payload) => heard.push(payload));
      const before = await listenPids();
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN "gl_outage_suite"%'`);
      await waitFor(async () => (await listenPids()).some((pid) => !before.includes(pid)), { description: 'a new LISTEN connection' });
      // The read-once nudge: a NOTIFY sent while nobody listened is lost, so the subscriber is woken to read.
      await waitFor(() => heard.includes(''), { description: 'the wake-up after reconnecting' });
      await admin.query(`SELECT pg_notify('gl_outage_suite', 'after')`);
      await waitFor(() => heard.includes('after'), { description: 'a NOTIFY after reconnecting' });
      await unlisten();
    } finally {
      await db.close();
    }
  });

  it('the idle service survives its LISTEN connection being terminated', async () => {
    const before = await listenPids();
    expect(before.length).toBeGreaterThan(0);
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`);
    await waitFor(async () => (await listenPids()).some((pid) => !before.includes(pid)), { description: 'the service to LISTEN again' });
    expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
    // Projections still follow the ledger: a change made now is read back.
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'after-listen', name: 'After listen' })).toMatchObject({ status: 'applied' });
    await service.projections.waitForCaughtUp();
  });

  it('terminating every backend during traffic answers successes or typed retryable refusals, never a 500', async () => {
    const statuses = new Map<string, number>();
    const problems: string[] = [];
    const count = (what: string) => statuses.set(what, (statuses.get(what) ?? 0) + 1);
    let stop = false;
    let commandNumber = 0;
    const check = async (what: string, response: Response) => {
      const text = await response.text();
      count(`${what} ${response.status}`);
      if (response.status === 503) {
        if (!response.headers.get('retry-after')) problems.push(`${what}: 503 without Retry-After`);
      } else if (response.status >= 500) problems.push(`${what}: ${response.status} ${text}`);
      if (what !== 'ingest') {
        const body = JSON.parse(text) as { errors?: Array<{ extensions?: { code?: string } }> };
        for (const error of body.errors ?? []) {
          if (error.extensions?.code !== 'SERVICE_UNAVAILABLE') problems.push(`${what}: ${JSON.stringify(error)}`);
        }
      }
    };
    const loops = [
      async () => {
        while (!stop) await check('ingest', await ingest());
      },
      async () => {
        while (!stop) await check('query', await graphql('{ tenants(first: 5) { edges { node { id } } } }'));
      },
      async () => {
        while (!stop) {
          const input = { tenantId: 'acme', commandId: `outage-${commandNumber++}`, deviceId: 'pump-1', payload: { reboot: true } };
          await check(
            'enqueue',
            await graphql('mutation ($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename } }', { input }),
          );
        }
      },
    ];
    const running = loops.map((loop) => loop());
    // Terminate every backend each time the traffic has made progress since the last time.
    for (let round = 0; round < 4; round++) {
      const answered = [...statuses.values()].reduce((sum, n) => sum + n, 0);
      await waitFor(() => [...statuses.values()].reduce((sum, n) => sum + n, 0) >= answered + 20, { timeoutMs: 30_000, description: 'traffic' });
      await terminateAll();
    }
    await waitFor(() => [...statuses.keys()].some((what) => what.endsWith(' 200')), { description: 'a success' });
    stop = true;
    await Promise.all(running);
    expect(problems).toEqual([]);
    const started = Date.now();
    await waitFor(async () => (await fetch(`${baseUrl}/readyz`)).status === 200, { timeoutMs: 5_000, description: '/readyz 200' });
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 120_000);

  it('/readyz is 503 while the database is stopped and 200 within 5 s of its return; what was admitted meanwhile reaches the ledger once', async () => {
    await postgres.stop();
    const ready = await fetch(`${baseUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: 'not ready', reasons: expect.arrayContaining(['the database is unavailable']) });

    const query = await graphql('{ tenants(first: 5) { edges { node { id } } } }');
    expect(query.status).toBe(503);
    expect(query.headers.get('retry-after')).toBe('1');
    const body = (await query.json()) as { errors: Array<{ message: string; extensions: { code: string } }> };
    expect(body.errors[0]!.extensions.code).toBe('SERVICE_UNAVAILABLE');
    expect(JSON.stringify(body)).not.toMatch(/\n\s+at |node_modules/);

    // The ingest door keeps admitting senders it verified lately; the Governor's batches wait for the ledger.
    for (let i = 0; i < 5; i++) expect((await ingest()).status).toBe(202);
    const failuresBefore = service.governor.stats().recordFailures;
    await waitFor(() => service.governor.stats().recordFailures > failuresBefore, { description: 'a batch the ledger could not take' });

    await postgres.start();
    const started = Date.now();
    await waitFor(async () => (await fetch(`${baseUrl}/readyz`)).status === 200, { timeoutMs: 5_000, intervalMs: 100, description: '/readyz 200' });
    expect(Date.now() - started).toBeLessThan(5_000);

    await service.governor.flush();
    const ledger = await readWholeLedger(service.store);
    const admitted = ledger
      .filter((event) => event.stream === ADMISSIONS_STREAM && event.type === 'AdmissionsRecorded')
      .flatMap(admissionSummaryReader())
      .filter((entry) => entry.tenantId === 'acme' && entry.dimension === 'INGEST' && entry.allowance === 'HTTP')
      .reduce((sum, entry) => sum + entry.admittedUnits, 0);
    expect(admitted).toBe(acceptedReadings);
  }, 120_000);

  it('a crash of PostgreSQL under traffic (SIGKILL of the postmaster) loses no acknowledged decision or command, and duplicates none', async () => {
    const accepted: string[] = [];
    const refused: string[] = [];
    const unsettled: string[] = [];
    const problems: string[] = [];
    let answers = 0;
    let stop = false;
    let commandNumber = 0;
    const loops = [
      async () => {
        while (!stop) {
          const response = await ingest();
          if (response.status !== 202 && !(response.status === 503 && response.headers.get('retry-after'))) problems.push(`ingest: ${response.status} ${await response.text()}`);
          else await response.arrayBuffer();
          answers++;
        }
      },
      async () => {
        while (!stop) {
          const input = { tenantId: 'acme', commandId: `crash-${commandNumber++}`, deviceId: 'pump-1', payload: { reboot: true } };
          // An enqueue answered SERVICE_UNAVAILABLE (or not at all) has an unknown fate until a retry with the same
          // id settles it, as a client must retry.
          for (let attempt = 0; ; attempt++) {
            const body = await graphql('mutation ($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename } }', { input })
              .then((response) => response.json() as Promise<{ data?: { enqueueCommand?: { __typename: string } }; errors?: Array<{ extensions?: { code?: string } }> }>)
              .catch(() => undefined);
            const outcome = body?.data?.enqueueCommand?.__typename;
            if (outcome === 'CommandAccepted') accepted.push(input.commandId);
            else if (outcome === 'CommandRejected') refused.push(input.commandId);
            else if (body?.errors?.some((error) => error.extensions?.code !== 'SERVICE_UNAVAILABLE')) problems.push(`enqueue: ${JSON.stringify(body)}`);
            else if (attempt < 200) {
              await new Promise((resolve) => setTimeout(resolve, 100));
              continue;
            } else unsettled.push(input.commandId);
            answers++;
            break;
          }
        }
      },
    ];
    const running = loops.map((loop) => loop());
    await waitFor(() => answers >= 30 && accepted.length > 0, { timeoutMs: 60_000, description: 'traffic before the crash' });
    await postgres.crash();
    const answeredAtCrash = answers;
    await postgres.start();
    await waitFor(async () => (await fetch(`${baseUrl}/readyz`)).status === 200, { timeoutMs: 30_000, intervalMs: 100, description: '/readyz 200 after the crash' });
    await waitFor(() => answers >= answeredAtCrash + 30, { timeoutMs: 60_000, description: 'traffic after the crash' });
    stop = true;
    await Promise.all(running);
    expect(problems).toEqual([]);
    expect(unsettled).toEqual([]);

    await service.governor.flush();
    const ledger = await readWholeLedger(service.store);
    const admitted = ledger
      .filter((event) => event.stream === ADMISSIONS_STREAM && event.type === 'AdmissionsRecorded')
      .flatMap(admissionSummaryReader())
      .filter((entry) => entry.tenantId === 'acme' && entry.dimension === 'INGEST' && entry.allowance === 'HTTP')
      .reduce((sum, entry) => sum + entry.admittedUnits, 0);
    expect(admitted).toBe(acceptedReadings);
    const enqueued = ledger
      .filter((event) => event.stream === commandsStream('acme') && event.type === 'CommandEnqueued')
      .map((event) => (event.data as { commandId: string }).commandId)
      .filter((id) => id.startsWith('crash-'));
    const times = new Map<string, number>();
    for (const id of enqueued) times.set(id, (times.get(id) ?? 0) + 1);
    expect(accepted.filter((id) => times.get(id) !== 1)).toEqual([]);
    expect(refused.filter((id) => times.has(id))).toEqual([]);
    expect(enqueued.length).toBe(accepted.length);
  }, 240_000);
});
