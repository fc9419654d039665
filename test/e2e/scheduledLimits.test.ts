// A scheduled limit change takes effect at its instant in every replica, each by its own timer
// (src/control-plane/change-requests/scheduler.ts): two `governance serve` processes from the sources (tsx) on
// one PostgreSQL schema. The change is scheduled through one replica's GraphQL; both replicas are then asked
// without pause (one reading per request, far below either limit) and the RateLimit-Policy of each answer says
// which limit decided it. In each replica the new limit decides no answer sent before the instant, and decides
// every answer sent later than SWITCH_BOUND_MS after it; each replica logs that its own timer fired.
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/token.ts';
import { createControlPlane } from '../../src/control-plane/index.ts';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { openEventStore } from '../../src/ledger/openEventStore.ts';
import type { EventStore } from '../../src/ledger/eventStore.ts';
import { postgresOnly, type TestDb } from '../support/databases.ts';
import { freePort } from '../support/privateServers.ts';
import { spawnTs, type SpawnedTs } from '../support/spawnTs.ts';
import { waitFor } from '../support/waitFor.ts';

/** docs/governance-model.md, "Scheduled and approved changes": in force in every replica within this of its instant. */
const SWITCH_BOUND_MS = 500;
/** How far ahead the change is scheduled: time for both replicas to hear of it and arm their timers. */
const LEAD_MS = 8_000;
const OLD_RATE = 1_000;
const NEW_RATE = 400;
const JWT_SECRET = 'scheduled-limits-suite-0123456789abcdef0123';
const OPERATOR = { id: 'alice@ops', role: 'OPERATOR' as const };

interface Replica {
  name: string;
  baseUrl: string;
  spawned: SpawnedTs;
  dataDir: string;
}

interface Answer {
  sentAt: number;
  answeredAt: number;
  rate: number | null;
}

describe.skipIf(!postgresOnly)('a scheduled limit change on two replicas (PostgreSQL)', () => {
  let storage: TestDb;
  let store: EventStore;
  let key: string;
  const replicas: Replica[] = [];

  beforeAll(async () => {
    storage = await postgresOnly!.open({ max: 2 });
    store = await openEventStore(storage.db, undefined);
    const controlPlane = createControlPlane({ db: storage.db, store });
    expect(await controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    expect(await controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'standard' })).toMatchObject({ status: 'applied' });
    expect(
      await controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: OLD_RATE, burst: OLD_RATE, reason: 'before' }),
    ).toMatchObject({ status: 'applied' });
    const registered = await registerIngestCredential(storage.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    key = registered.key;
    for (const name of ['r1', 'r2']) {
      const port = await freePort();
      const dataDir = await mkdtemp(path.join(tmpdir(), `gl-scheduled-${name}-`));
      const spawned = spawnTs(['bin/governance.js', 'serve'], {
        ...storage.env!,
        GOVERNANCE_RUN_SOURCES: '1',
        GOVERNANCE_DATA_DIR: dataDir,
        GOVERNANCE_JWT_SECRET: JWT_SECRET,
        HOST: '127.0.0.1',
        PORT: String(port),
        GOVERNANCE_GRPC_PORT: String(await freePort()),
        NATS_URL: '',
        MQTT_URL: '',
        REDIS_URL: '',
        EVENTSTORE_URL: '',
        LOG_LEVEL: 'info',
      });
      replicas.push({ name, baseUrl: `http://127.0.0.1:${port}`, spawned, dataDir });
    }
    for (const replica of replicas) {
      await waitFor(
        async () => {
          if (replica.spawned.child.exitCode !== null) throw new Error(`replica ${replica.name} ended:\n${replica.spawned.output()}`);
          return (await fetch(`${replica.baseUrl}/readyz`).catch(() => null))?.status === 200;
        },
        { timeoutMs: 150_000, intervalMs: 250, description: `replica ${replica.name} ready` },
      );
    }
  }, 200_000);

  afterAll(async () => {
    for (const replica of replicas) {
      replica.spawned.child.kill('SIGTERM');
      await Promise.race([replica.spawned.exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
      if (replica.spawned.child.exitCode === null) replica.spawned.child.kill('SIGKILL');
      await rm(replica.dataDir, { recursive: true, force: true });
    }
    await store?.close();
    await storage?.dispose();
  });

  /** One reading to acme through a replica: which readings limit decided it (RateLimit-Policy q). */
  async function ask(replica: Replica): Promise<Answer> {
    const sentAt = Date.now();
    const response = await fetch(`${replica.baseUrl}/v1/ingest/acme`, {
      method: 'POST',
      body: JSON.stringify({ readings: [{ measurements: { t: 1 } }] }),
      headers: { 'content-type': 'application/json', 'x-device-key': key },
    });
    await response.arrayBuffer();
    const policy = response.headers.get('ratelimit-policy') ?? '';
    const rate = /"tenant-readings";q=(\d+)/.exec(policy)?.[1];
    return { sentAt, answeredAt: Date.now(), rate: rate === undefined ? null : Number(rate) };
  }

  it(`switches both replicas at the instant, each by its own timer, within ${SWITCH_BOUND_MS} ms`, async () => {
    for (const replica of replicas) {
      await waitFor(async () => (await ask(replica)).rate === OLD_RATE, { timeoutMs: 30_000, description: `${replica.name} meters acme at ${OLD_RATE}/s` });
    }
    const token = await mintToken({ secret: JWT_SECRET, role: 'OPERATOR', sub: 'bob@ops', ttl: '10m' });
    const instant = new Date(Date.now() + LEAD_MS);
    const response = await fetch(`${replicas[0]!.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        query: `mutation($input: SetTenantOverrideInput!) { setTenantOverride(input: $input) {
          __typename ... on ScheduledLimitChange { changeId effectiveFrom } ... on Error { message } } }`,
        variables: {
          input: { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: NEW_RATE, burst: NEW_RATE, reason: 'night rate', effectiveFrom: instant.toISOString() },
        },
      }),
    });
    const body = (await response.json()) as { data: { setTenantOverride: { __typename: string; changeId: string } } };
    expect(body.data.setTenantOverride.__typename).toBe('ScheduledLimitChange');
    const { changeId } = body.data.setTenantOverride;

    // Ask both replicas, each without pause, from before the instant until both answer the new limit.
    const answers = new Map<string, Answer[]>(replicas.map((replica) => [replica.name, []]));
    const deadline = instant.getTime() + 20_000;
    await Promise.all(
      replicas.map(async (replica) => {
        const seen = answers.get(replica.name)!;
        for (;;) {
          const answer = await ask(replica);
          seen.push(answer);
          if ((answer.rate === NEW_RATE && answer.sentAt > instant.getTime()) || Date.now() > deadline) return;
        }
      }),
    );

    const load = loadavg()[0]!.toFixed(2);
    for (const replica of replicas) {
      const seen = answers.get(replica.name)!;
      const firstNew = seen.find((answer) => answer.rate === NEW_RATE);
      const lastOld = [...seen].reverse().find((answer) => answer.rate === OLD_RATE);
      expect(firstNew, `${replica.name} never answered ${NEW_RATE}`).toBeDefined();
      // Never early: the new limit decides nothing answered before the instant.
      expect(firstNew!.answeredAt).toBeGreaterThanOrEqual(instant.getTime());
      // On time: nothing sent later than the bound after the instant is decided by the old limit.
      expect(lastOld!.sentAt - instant.getTime()).toBeLessThanOrEqual(SWITCH_BOUND_MS);
      expect(seen.filter((answer) => answer.sentAt > instant.getTime() + SWITCH_BOUND_MS).every((answer) => answer.rate === NEW_RATE)).toBe(true);
      // Its own timer fired (the log line of src/service.ts), not a notification from the other replica.
      await waitFor(() => replica.spawned.output().includes(changeId) && /scheduled limit change due/.test(replica.spawned.output()), {
        timeoutMs: 5_000,
        description: `${replica.name} logs its own timer`,
      });
      console.log(
        `${replica.name}: last ${OLD_RATE}/s answer sent ${lastOld!.sentAt - instant.getTime()} ms after the instant, first ${NEW_RATE}/s answered ` +
          `${firstNew!.answeredAt - instant.getTime()} ms after it (${seen.length} answers; load ${load})`,
      );
    }
  });
});
