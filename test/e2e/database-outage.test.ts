// The service on a PostgreSQL of the suite's own, while that database loses connections and goes away:
// the LISTEN connection comes back by itself and reads once; terminating every backend during traffic answers
// only successes and typed, retryable refusals (HTTP 503 with Retry-After, GraphQL SERVICE_UNAVAILABLE),
// never a 500; /readyz is 503 while the database is stopped and 200 within 5 s of its return; and what the
// Governor admitted meanwhile reaches the ledger exactly once. The database runs durably (fsync on, as in
// production) and crashes once under traffic (SIGKILL of its postmaster): after its recovery every decision and
// every command the service acknowledged is in the ledger exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { commandsTold, enqueueCommandsUntil } from '../support/commandClient.ts';
import { expectCommandsAsTold, ledgerHttpIngest, startFaultSuiteService, type FaultSuiteService } from '../support/databaseFaultSuite.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../support/privateServers.ts';
import { readWholeLedger } from '../support/readLedger.ts';
import { waitFor } from '../support/waitFor.ts';

// Durable, so that the crash below may lose only what was never acknowledged.
const pg = await startPrivatePostgres({ durable: true });

describe.skipIf(!pg)('the service while its PostgreSQL loses connections and goes away', () => {
  const postgres = pg as PrivatePostgres;
  let suite: FaultSuiteService;
  let service: FaultSuiteService['service'];
  let baseUrl: string;
  let admin: Db;
  const ingest = () => suite.ingest();
  const graphql = (query: string, variables?: Record<string, unknown>) => suite.graphql(query, variables);

  beforeAll(async () => {
    suite = await startFaultSuiteService('database-outage', postgres.url);
    ({ service, baseUrl } = suite);
    admin = openPostgres({ connectionString: postgres.url, max: 1 });
  }, 180_000);

  afterAll(async () => {
    await suite?.close();
    await admin?.close();
    await postgres.dispose();
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
    expect(ledgerHttpIngest(await readWholeLedger(service.store), 'acme')).toBe(suite.acceptedReadings);
  }, 120_000);

  it('a crash of PostgreSQL under traffic (SIGKILL of the postmaster) loses no acknowledged decision or command, and duplicates none', async () => {
    const commands = commandsTold();
    const problems: string[] = [];
    let answers = 0;
    let stop = false;
    const running = [
      suite.ingestUntil(() => stop, problems, () => answers++),
      enqueueCommandsUntil(() => stop, { baseUrl, token: suite.token, prefix: 'crash-', told: commands, maxRetries: 200, answered: () => answers++ }),
    ];
    await waitFor(() => answers >= 30 && commands.accepted.length > 0, { timeoutMs: 60_000, description: 'traffic before the crash' });
    await postgres.crash();
    const answeredAtCrash = answers;
    await postgres.start();
    await waitFor(async () => (await fetch(`${baseUrl}/readyz`)).status === 200, { timeoutMs: 30_000, intervalMs: 100, description: '/readyz 200 after the crash' });
    await waitFor(() => answers >= answeredAtCrash + 30, { timeoutMs: 60_000, description: 'traffic after the crash' });
    stop = true;
    await Promise.all(running);
    expect([...problems, ...commands.problems]).toEqual([]);
    expect(commands.unsettled).toEqual([]);

    await service.governor.flush();
    const ledger = await readWholeLedger(service.store);
    expect(ledgerHttpIngest(ledger, 'acme')).toBe(suite.acceptedReadings);
    expectCommandsAsTold(ledger, 'acme', 'crash-', commands);
  }, 240_000);
});
