// DATABASE_READ_URL on a streaming replica made as an operator makes one: a private primary, `pg_basebackup -R`
// from it, the copy started as a hot standby (test/support/privateServers.ts). The service reads trends,
// limit history and command lists there, says how stale each such answer may be (the `readReplica` extension),
// keeps the command backlog and a caller's reads after its own write on the primary, stops reading a replica
// that falls behind (replay paused) or goes away, and reads it again once it has caught up.
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
import { createServer, listen } from '../../src/http-server/server.ts';
import { PROBE_INTERVAL_MS } from '../../src/read-replica/readRouting.ts';
import { startService, type Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { startPrivatePostgres, startStreamingReplica, type PrivatePostgres } from '../support/privateServers.ts';
import { waitFor } from '../support/waitFor.ts';

const JWT_SECRET = 'read-replica-suite-secret-0123456789abcdef';
/** GOVERNANCE_READ_MAX_STALENESS_SECONDS in the suite. */
const MAX_STALENESS_SECONDS = 3;
const SUITE_BUDGET_MS = 150_000;

const primary = await startPrivatePostgres();
const replica = primary ? await startStreamingReplica(primary) : undefined;
if (!replica) console.warn('read replica suite skipped: no private PostgreSQL with pg_basebackup (see the warning above)');

interface Answer {
  data?: Record<string, unknown>;
  errors?: unknown[];
  extensions?: { readReplica?: { reads: number; stalenessSeconds: number } };
}

describe.skipIf(!replica)('GraphQL reads on a streaming replica (DATABASE_READ_URL)', () => {
  const source = primary as PrivatePostgres;
  const standby = replica as PrivatePostgres;
  let dataDir: string;
  let service: Service;
  let server: Server;
  let baseUrl: string;
  let onReplica: Db;
  const tokens: Record<'writer' | 'reader', string> = { writer: '', reader: '' };
  /** Every staleness bound an answer from the replica gave, seconds. */
  const bounds: number[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-read-replica-'));
    service = await startService(
      readSettings({
        DATABASE_URL: source.url,
        DATABASE_READ_URL: standby.url,
        GOVERNANCE_READ_MAX_STALENESS_SECONDS: String(MAX_STALENESS_SECONDS),
        GOVERNANCE_DATA_DIR: dataDir,
        GOVERNANCE_JWT_SECRET: JWT_SECRET,
      }),
      pino({ level: 'silent' }),
    );
    server = createServer(service, service.routes);
    baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
    onReplica = openPostgres({ connectionString: standby.url, max: 1 });
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'standard' })).toMatchObject({ status: 'applied' });
    await service.projections.waitForCaughtUp();
    tokens.writer = await mintToken({ secret: JWT_SECRET, role: 'OPERATOR', sub: 'writer', ttl: '10m' });
    tokens.reader = await mintToken({ secret: JWT_SECRET, role: 'OPERATOR', sub: 'reader', ttl: '10m' });
  }, 120_000);

  afterAll(async () => {
    console.info(`read replica suite: staleness bounds reported ${JSON.stringify(bounds.map((b) => Math.round(b * 1000) / 1000))} s`);
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await service?.close();
    await onReplica?.close();
    await standby.dispose();
    await source.dispose();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const graphql = async (who: keyof typeof tokens, query: string, variables?: Record<string, unknown>): Promise<Answer> => {
    const response = await fetch(`${baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens[who]}` },
      body: JSON.stringify({ query, variables }),
    });
    const answer = (await response.json()) as Answer;
    expect(answer.errors).toBeUndefined();
    if (answer.extensions?.readReplica) bounds.push(answer.extensions.readReplica.stalenessSeconds);
    return answer;
  };
  const HISTORY = `{ limitHistory(tenantId: "acme", first: 50) { edges { node { kind reason } } } }`;
  const reasons = (answer: Answer) =>
    ((answer.data!.limitHistory as { edges: Array<{ node: { reason: string | null } }> }).edges ?? []).map((edge) => edge.node.reason);
  const setOverride = (reason: string, ratePerSecond = 500) =>
    graphql('writer', 'mutation ($input: SetTenantOverrideInput!) { setTenantOverride(input: $input) { __typename } }', {
      input: { tenantId: 'acme', dimension: 'INGEST', ratePerSecond, reason },
    });

  it('stale reads come from the replica with a staleness bound; the command backlog and mutations stay on the primary', async () => {
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    let answer: Answer | undefined;
    await waitFor(
      async () => {
        answer = await graphql('reader', HISTORY);
        return answer.extensions?.readReplica !== undefined;
      },
      { timeoutMs: 30_000, description: 'the replica caught up and read from' },
    );
    expect(answer!.extensions!.readReplica!.stalenessSeconds).toBeLessThanOrEqual(MAX_STALENESS_SECONDS);
    // /metrics gives the current bound (-1 only while the replica is not read from).
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    const gauge = /^devicechain_\w+_governance_read_replica_staleness_seconds (\S+)$/m.exec(metrics);
    expect(gauge).not.toBeNull();
    expect(Number(gauge![1])).toBeLessThanOrEqual(MAX_STALENESS_SECONDS);
    for (const query of [
      `{ topShedders(from: "${from}", to: "${to}") { tenantId } }`,
      `{ shedTrend(tenantId: "acme", dimension: INGEST, from: "${from}", to: "${to}", bucket: MINUTE) { start } }`,
      `{ commands(tenantId: "acme") { edges { node { commandId } } } }`,
      `{ commandRejectionTrend(tenantId: "acme", from: "${from}", to: "${to}", bucket: HOUR) { rejected } }`,
    ]) {
      const read = await graphql('reader', query);
      // A probe may find the replica a moment behind; then the primary answers, and says nothing.
      if (read.extensions?.readReplica) expect(read.extensions.readReplica.stalenessSeconds).toBeLessThanOrEqual(MAX_STALENESS_SECONDS);
    }
    const backlog = await graphql('reader', '{ commandBacklog(tenantId: "acme") { undelivered } }');
    expect(backlog.extensions?.readReplica).toBeUndefined();
    const mutation = await graphql(
      'writer',
      'mutation ($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename } }',
      { input: { tenantId: 'acme', commandId: 'replica-1', deviceId: 'pump-1', payload: { reboot: true } } },
    );
    expect(mutation.extensions?.readReplica).toBeUndefined();
  });

  it('a writer reads its own write while the replica lags; others read the replica until it is too far behind, then the primary', async () => {
    await onReplica.query('SELECT pg_wal_replay_pause()');
    try {
      await setOverride('while the replica is paused');
      await service.projections.waitForCaughtUp();
      // The writer's next stale read cannot come from a replica that has not replayed its write.
      const own = await graphql('writer', HISTORY);
      expect(own.extensions?.readReplica).toBeUndefined();
      expect(reasons(own)).toContain('while the replica is paused');
      // Another caller may read the paused replica only within the bound, and then without the change.
      const started = Date.now();
      let other: Answer;
      for (;;) {
        other = await graphql('reader', HISTORY);
        if (!other.extensions?.readReplica) break;
        expect(reasons(other)).not.toContain('while the replica is paused');
        expect(other.extensions.readReplica.stalenessSeconds).toBeLessThanOrEqual(MAX_STALENESS_SECONDS + 0.001);
        expect(Date.now() - started).toBeLessThan(30_000);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(reasons(other)).toContain('while the replica is paused');
    } finally {
      await onReplica.query('SELECT pg_wal_replay_resume()');
    }
    await waitFor(
      async () => {
        const answer = await graphql('reader', HISTORY);
        return answer.extensions?.readReplica !== undefined && reasons(answer).includes('while the replica is paused');
      },
      { timeoutMs: 30_000, description: 'the resumed replica read from again, holding the change' },
    );
  });

  it('a writer reads its own write when the primary acknowledges commits before their WAL is written', async () => {
    // This suite's primary runs with synchronous_commit off. A long wal_writer_delay keeps an acknowledged
    // commit's WAL unwritten for seconds: a probe of the primary's write position (not its insert position)
    // would then find the replica "caught up" without the write and send the writer's next read there.
    await source.psql("ALTER SYSTEM SET wal_writer_delay = '10s'");
    await source.psql('SELECT pg_reload_conf()');
    try {
      for (let round = 1; round <= 3; round++) {
        const reason = `acknowledged before its WAL was written, round ${round}`;
        await setOverride(reason, 600 + round);
        await service.projections.waitForCaughtUp();
        // Two probes start after the write (PROBE_INTERVAL_MS apart) before the writer reads again.
        await new Promise((resolve) => setTimeout(resolve, 3 * PROBE_INTERVAL_MS));
        // From the primary, or from a replica that has replayed the write: either way with it.
        expect(reasons(await graphql('writer', HISTORY))).toContain(reason);
      }
    } finally {
      await source.psql('ALTER SYSTEM RESET wal_writer_delay');
      await source.psql('SELECT pg_reload_conf()');
    }
  });

  it('a replica that goes away costs no read: the primary answers until it is back', async () => {
    await standby.stop();
    for (let i = 0; i < 5; i++) {
      const answer = await graphql('reader', HISTORY);
      expect(answer.extensions?.readReplica).toBeUndefined();
    }
    await standby.start();
    await waitFor(async () => (await graphql('reader', HISTORY)).extensions?.readReplica !== undefined, {
      timeoutMs: 30_000,
      description: 'the replica read from again after its restart',
    });
  });
}, SUITE_BUDGET_MS);
