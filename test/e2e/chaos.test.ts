// Chaos: the service as a process of its own, on a PostgreSQL, a Redis and a NATS of the suite's own (the
// machine's shared servers are never touched), under steady ingest and enqueue traffic from another process.
// One after another: every backend of the service's database is terminated; PostgreSQL restarts; PostgreSQL
// crashes (SIGKILL of its postmaster, with fsync on as in production) and is started again, recovering from
// its WAL; Redis restarts; NATS stops for 10 s. After each the process is alive and /readyz is 200 within 10 s
// of the dependency's return. At the end the ledger agrees with what the clients were told: every
// CommandAccepted is in it exactly once and no refused command is; the admitted ingest units are exactly those
// answered 202: no 429 counts as admitted (a tenant with a low limit is in the traffic, so 429s do happen),
// and neither does a 503 after the readings were charged (the charge is withdrawn, see docs/faults.md).
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/token.ts';
import { readSettings } from '../../src/config.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openDb } from '../../src/db/open.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { openEventStore } from '../../src/ledger/openEventStore.ts';
import { startPrivateNats, startPrivatePostgres, startPrivateRedis, type PrivatePostgres, type PrivateServer } from '../support/privateServers.ts';
import { readWholeLedger } from '../support/readLedger.ts';
import type { CommandsTold } from '../support/commandClient.ts';
import { expectCommandsAsTold, ledgerHttpIngest } from '../support/databaseFaultSuite.ts';
import { operatorMutations } from '../support/operatorMutations.ts';
import { serveTs, serviceProcessEnv, spawnTs } from '../support/spawnTs.ts';
import { waitFor } from '../support/waitFor.ts';

const JWT_SECRET = 'chaos-suite-secret-0123456789abcdef0123456789';
const READY_WITHIN_MS = 10_000;

// Durable: a crash may lose only what was never acknowledged.
const [pg, redis, nats] = await Promise.all([startPrivatePostgres({ durable: true }), startPrivateRedis(), startPrivateNats()]);
/** The limited tenant's INGEST limit: its paced traffic (2 units every 20 ms, 100/s) passes it, so some posts get 429. */
const LIMITED_UNITS_PER_SECOND = 10;
const servers = { pg, redis, nats };
const missing = Object.entries(servers).filter(([, server]) => !server).map(([name]) => name);
if (missing.length > 0) {
  console.warn(`chaos suite skipped: no private ${missing.join(', ')} could be started`);
  await Promise.all(Object.values(servers).map((server) => server?.dispose()));
}

interface IngestTold {
  acceptedReadings: number;
  unavailableReadings: number;
  refusedReadings: number;
  statuses: Record<string, number>;
}

interface Told {
  ingest: IngestTold;
  limited: IngestTold;
  commands: CommandsTold;
  problems: string[];
}

describe.skipIf(missing.length > 0)('chaos: the service under traffic while its dependencies fail', () => {
  const postgres = pg as PrivatePostgres;
  const redisServer = redis as PrivateServer;
  const natsServer = nats as PrivateServer;
  const children: ChildProcess[] = [];
  let dataDir: string | undefined;

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all([postgres.dispose(), redisServer.dispose(), natsServer.dispose()]);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('stays up, is ready again within 10 s of each return, and the ledger agrees with what clients were told', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-chaos-'));
    const env = await serviceProcessEnv({ DATABASE_URL: postgres.url, REDIS_URL: redisServer.url, NATS_URL: natsServer.url }, dataDir, JWT_SECRET);
    const settings = readSettings(env);
    const setupDb = await openDb(settings);
    await migrate(setupDb);
    const registered = await registerIngestCredential(setupDb, { tenantId: 'acme', kind: 'tenant', subject: null });
    const limitedKey = await registerIngestCredential(setupDb, { tenantId: 'limited', kind: 'tenant', subject: null });
    await setupDb.close();
    if (registered.status !== 'registered') throw new Error(registered.message);
    if (limitedKey.status !== 'registered') throw new Error(limitedKey.message);

    const service = await serveTs(env, 'pipe');
    children.push(service.child);
    const baseUrl = `http://127.0.0.1:${env.PORT}`;

    const token = await mintToken({ secret: JWT_SECRET, role: 'OPERATOR', sub: 'chaos-suite', ttl: '30m' });
    const mutate = await operatorMutations(baseUrl, JWT_SECRET, 'chaos-suite');
    await mutate('defineTier', { tierId: 'standard', name: 'Standard' });
    await mutate('registerTenant', { tenantId: 'acme', tierId: 'standard' });
    await mutate('setTenantOverride', { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 1_000_000, burst: 1_000_000, reason: 'chaos: no ingest refusals' });
    await mutate('setTenantOverride', { tenantId: 'acme', dimension: 'API_REQUESTS', ratePerSecond: 1_000_000, reason: 'chaos: no request refusals' });
    await mutate('registerTenant', { tenantId: 'limited', tierId: 'standard' });
    // Only the ingest limit refuses the limited tenant: a 429 it gets is an INGEST refusal.
    await mutate('setTenantOverride', {
      tenantId: 'limited',
      dimension: 'INGEST',
      ratePerSecond: LIMITED_UNITS_PER_SECOND,
      burst: LIMITED_UNITS_PER_SECOND,
      reason: 'chaos: some ingest refusals',
    });
    await mutate('setTenantOverride', { tenantId: 'limited', dimension: 'API_REQUESTS', ratePerSecond: 1_000_000, reason: 'chaos: no request refusals' });
    // A ceiling the traffic passes, so some enqueues are refused and the ledger must not hold them.
    await mutate('setTenantOverride', { tenantId: 'acme', dimension: 'UNDELIVERED_COMMANDS', ceiling: 40, reason: 'chaos: some refusals' });
    const ready = async () => (await fetch(`${baseUrl}/readyz`).catch(() => undefined))?.status === 200;
    await waitFor(ready, { timeoutMs: 60_000, description: '/readyz 200 before the chaos' });

    const traffic = spawnTs(['test/e2e/chaosTraffic.child.ts'], { BASE_URL: baseUrl, INGEST_KEY: registered.key, LIMITED_KEY: limitedKey.key, TOKEN: token }, 'pipe');
    children.push(traffic.child);
    const progress = () => Number([...traffic.output().matchAll(/progress (\d+)/g)].at(-1)?.[1] ?? 0);
    const moreTraffic = async (answers: number) => {
      const from = progress();
      await waitFor(() => progress() >= from + answers, { timeoutMs: 60_000, description: `${answers} more answers to the traffic` });
    };
    const readyAgain = async (fault: string) => {
      const returned = Date.now();
      await waitFor(ready, { timeoutMs: READY_WITHIN_MS + 5_000, intervalMs: 100, description: `/readyz 200 after ${fault}` });
      expect(Date.now() - returned, `${fault}: ready after`).toBeLessThan(READY_WITHIN_MS);
      expect(service.child.exitCode, `${fault}: the service exited\n${service.output()}`).toBeNull();
      await moreTraffic(20);
    };

    await moreTraffic(30);
    const admin = openPostgres({ connectionString: postgres.url, max: 1 });
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
    await admin.close();
    await readyAgain('terminating every backend');

    await postgres.restart();
    await readyAgain('restarting PostgreSQL');

    // A crash, not a shutdown: no checkpoint, the service's connections cut mid-transaction. What the service
    // acknowledged was committed with fsync on, so the recovered database must hold it (checked at the end).
    await postgres.crash();
    await postgres.start();
    await readyAgain('a crash of PostgreSQL (SIGKILL of the postmaster) and its recovery');

    await redisServer.stop();
    await redisServer.start();
    await readyAgain('restarting Redis');

    await natsServer.stop();
    const stoppedAt = Date.now();
    // The outage itself lasts 10 s, with traffic all along.
    await waitFor(() => Date.now() - stoppedAt >= 10_000, { timeoutMs: 15_000, intervalMs: 200, description: 'the 10 s NATS outage' });
    await natsServer.start();
    await readyAgain('stopping NATS for 10 s');

    traffic.child.stdin!.write('stop\n');
    expect(await traffic.exited).toBe(0);
    const told = JSON.parse(traffic.output().trim().split('\n').at(-1)!) as Told;
    // SIGTERM flushes every decision the Governor holds.
    service.child.kill('SIGTERM');
    expect(await service.exited, service.output()).toBe(0);

    expect([...told.problems, ...told.commands.problems]).toEqual([]);
    expect(told.commands.unsettled).toEqual([]);
    expect(told.commands.accepted.length).toBeGreaterThan(0);
    expect(told.commands.refused.length).toBeGreaterThan(0);
    expect(told.ingest.acceptedReadings).toBeGreaterThan(0);
    expect(told.limited.acceptedReadings).toBeGreaterThan(0);
    expect(told.limited.refusedReadings, JSON.stringify(told.limited)).toBeGreaterThan(0);

    const db = await openDb(settings);
    const store = await openEventStore(db, undefined);
    try {
      const ledger = await readWholeLedger(store);
      expect(ledgerHttpIngest(ledger, 'acme')).toBe(told.ingest.acceptedReadings);
      // What was refused with 429 is not in the ledger as admitted: the admitted units are exactly those
      // answered 202, and each refused post is recorded as one rejected message (refused at the message charge
      // with 0 units, or at the readings charge with its readings: docs/governance-model.md).
      expect(ledgerHttpIngest(ledger, 'limited')).toBe(told.limited.acceptedReadings);
      expect(ledgerHttpIngest(ledger, 'limited', 'rejectedMessages')).toBe(told.limited.statuses['429']);
      expectCommandsAsTold(ledger, 'acme', 'chaos-', told.commands);
    } finally {
      await store.close();
      await db.close();
    }
  }, 300_000);
});
