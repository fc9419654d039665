// PostgreSQL failover under traffic: the service's DATABASE_URL names HAProxy (TCP mode), in front of a private
// primary and its streaming replica (pg_basebackup -R, synchronous: the primary acknowledges a commit once the
// replica has it). Under ingest and command traffic the primary is SIGKILLed, /readyz says the database is away
// (then, while the proxy already sends connections to the replica not yet promoted, that it is read-only),
// the replica is promoted (`pg_ctl promote`), and the service reconnects and writes again by itself. Every
// decision and command the clients were told about is then in the ledger exactly once, read from the promoted
// server. The outage is measured from the kill to the first command accepted after it.
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/token.ts';
import { readSettings } from '../../src/config.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import { commandsStream } from '../../src/ledger/catalog/commands.ts';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { createServer, listen } from '../../src/http-server/server.ts';
import { startService, type Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { haproxyBinary, startPostgresHaproxy, type RunningHaproxy } from '../support/haproxy.ts';
import { freePort, startPrivatePostgres, startStreamingReplica, type PrivatePostgres } from '../support/privateServers.ts';
import { readWholeLedger } from '../support/readLedger.ts';
import { waitFor } from '../support/waitFor.ts';
import { admissionSummaryReader } from '../../src/ledger/catalog/summaryRefs.ts';

const JWT_SECRET = 'failover-suite-secret-0123456789abcdef0123';
const SUITE_BUDGET_MS = 170_000;

const missing = haproxyBinary() ? undefined : 'haproxy is not installed (apt-get install haproxy)';
const primary = missing ? undefined : await startPrivatePostgres({ durable: true });
const standby = primary ? await startStreamingReplica(primary, { synchronous: true }) : undefined;
if (missing) console.warn(`PostgreSQL failover suite skipped: ${missing}`);
else if (!standby) console.warn('PostgreSQL failover suite skipped: no private PostgreSQL with pg_basebackup (see the warning above)');

describe.skipIf(!standby)('PostgreSQL failover behind HAProxy: primary killed, replica promoted', () => {
  const oldPrimary = primary as PrivatePostgres;
  const replica = standby as PrivatePostgres;
  let proxy: RunningHaproxy;
  let dataDir: string;
  let service: Service;
  let server: Server;
  let baseUrl: string;
  let key: string;
  let token: string;
  let acceptedReadings = 0;

  beforeAll(async () => {
    proxy = await startPostgresHaproxy({
      port: await freePort(),
      primary: { name: 'primary', port: oldPrimary.port },
      standby: { name: 'standby', port: replica.port },
    });
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-failover-'));
    service = await startService(
      readSettings({
        DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`,
        GOVERNANCE_DATA_DIR: dataDir,
        GOVERNANCE_JWT_SECRET: JWT_SECRET,
      }),
      pino({ level: 'silent' }),
    );
    server = createServer(service, service.routes);
    baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'standard' })).toMatchObject({ status: 'applied' });
    for (const dimension of ['INGEST', 'API_REQUESTS'] as const) {
      const limit = dimension === 'INGEST' ? { ratePerSecond: 1_000_000, burst: 1_000_000 } : { ratePerSecond: 1_000_000 };
      expect(
        await service.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension, ...limit, reason: 'failover suite: nothing refused by a limit' }),
      ).toMatchObject({ status: 'applied' });
    }
    await service.projections.waitForCaughtUp();
    const registered = await registerIngestCredential(service.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    key = registered.key;
    token = await mintToken({ secret: JWT_SECRET, role: 'OPERATOR', sub: 'failover-suite', ttl: '10m' });
    expect((await ingest()).status).toBe(202);
    await service.governor.loadsSettled();
  }, 120_000);

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await service?.close();
    await proxy?.stop();
    await replica.dispose();
    await oldPrimary.dispose();
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

  it('the service reconnects to the promoted replica, writes resume, and nothing acknowledged is lost', async () => {
    const accepted: string[] = [];
    const refused: string[] = [];
    const unsettled: string[] = [];
    const problems: string[] = [];
    /** When each command was accepted (ms since the epoch). */
    const acceptedAt: number[] = [];
    let answers = 0;
    let stop = false;
    let commandNumber = 0;
    const loops = [
      async () => {
        while (!stop) {
          const response = await ingest();
          const unavailable = response.status === 503 && response.headers.get('retry-after');
          if (response.status !== 202 && !unavailable) problems.push(`ingest: ${response.status} ${await response.text()}`);
          else await response.arrayBuffer();
          answers++;
          // A client told to retry later waits before it does, as the command loop below does: a 503 comes back at
          // once, and a loop that did not wait would send over the edge's per-IP limit (1,000 requests/s) and be
          // answered 429 for its own pace, not for the failover.
          if (unavailable) await new Promise((resolve) => setTimeout(resolve, 100));
        }
      },
      async () => {
        while (!stop) {
          const input = { tenantId: 'acme', commandId: `failover-${commandNumber++}`, deviceId: 'pump-1', payload: { reboot: true } };
          // An enqueue answered SERVICE_UNAVAILABLE has an unknown fate until a retry with the same id settles it.
          for (let attempt = 0; ; attempt++) {
            const body = await graphql('mutation ($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename } }', { input })
              .then((response) => response.json() as Promise<{ data?: { enqueueCommand?: { __typename: string } }; errors?: Array<{ extensions?: { code?: string } }> }>)
              .catch(() => undefined);
            const outcome = body?.data?.enqueueCommand?.__typename;
            if (outcome === 'CommandAccepted') {
              accepted.push(input.commandId);
              acceptedAt.push(Date.now());
            } else if (outcome === 'CommandRejected') refused.push(input.commandId);
            else if (body?.errors?.some((error) => error.extensions?.code !== 'SERVICE_UNAVAILABLE')) problems.push(`enqueue: ${JSON.stringify(body)}`);
            else if (attempt < 600) {
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
    try {
      await waitFor(() => answers >= 30 && accepted.length > 5, { timeoutMs: 60_000, description: 'traffic before the failover' });
      const killedAt = Date.now();
      await oldPrimary.crash();
      // The service tells the outage: the database away while the proxy still sends connections to the dead
      // primary, then read-only once it sends them to the replica, not yet promoted.
      const reasons = new Set<string>();
      await waitFor(
        async () => {
          const ready = await fetch(`${baseUrl}/readyz`);
          const body = (await ready.json()) as { reasons?: string[] };
          for (const reason of body.reasons ?? []) reasons.add(reason);
          return ready.status === 503 && (body.reasons ?? []).some((reason) => reason.includes('read-only'));
        },
        { timeoutMs: 30_000, intervalMs: 100, description: '/readyz 503: the database is read-only (the proxy on the replica)' },
      );
      const promotedAt = Date.now();
      await replica.promote();
      await waitFor(async () => (await fetch(`${baseUrl}/readyz`)).status === 200, { timeoutMs: 30_000, intervalMs: 100, description: '/readyz 200 after the promotion' });
      const readyAt = Date.now();
      await waitFor(() => acceptedAt.some((at) => at > killedAt), { timeoutMs: 30_000, description: 'a command accepted after the failover' });
      const resumedAt = acceptedAt.find((at) => at > killedAt)!;
      const answeredAtFailover = answers;
      await waitFor(() => answers >= answeredAtFailover + 30, { timeoutMs: 60_000, description: 'traffic after the failover' });
      console.info(
        `PostgreSQL failover: /readyz reasons ${JSON.stringify([...reasons])}; kill to promote ${promotedAt - killedAt} ms (the suite waits for the proxy to move), ` +
          `promote to /readyz 200 ${readyAt - promotedAt} ms, kill to the first command accepted ${resumedAt - killedAt} ms ` +
          `(promote to it ${Math.max(0, resumedAt - promotedAt)} ms)`,
      );
      // Whether a check fell in the moment the old primary refused connections (before the proxy moved) is timing.
      // A new connection through the proxy may also hang until the proxy gives the dead server up: not answering.
      const outage = /the database is unavailable|read-only|does not answer|did not answer within/;
      expect([...reasons].filter((reason) => !outage.test(reason))).toEqual([]);
      expect(readyAt - promotedAt).toBeLessThan(10_000);
    } finally {
      stop = true;
      await Promise.all(running);
    }
    expect(problems).toEqual([]);
    expect(unsettled).toEqual([]);
    expect((await proxy.serverStates()).get('primary')).toMatch(/DOWN/);

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
      .filter((id) => id.startsWith('failover-'));
    const times = new Map<string, number>();
    for (const id of enqueued) times.set(id, (times.get(id) ?? 0) + 1);
    expect(accepted.filter((id) => times.get(id) !== 1)).toEqual([]);
    expect(refused.filter((id) => times.has(id))).toEqual([]);
    expect(enqueued.length).toBe(accepted.length);
    console.info(`PostgreSQL failover: ${accepted.length} commands accepted and ${acceptedReadings} readings answered 202, all in the promoted server's ledger once`);
  }, SUITE_BUDGET_MS);
});
