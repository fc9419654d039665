// A limit set in one process is enforced by another on first contact (docs/governance-model.md, "When a limit
// takes effect"): two `governance serve` processes from the compiled build on one PostgreSQL schema. A limit set
// through replica A before replica B starts holds on B's first request (B reads every tenant before it is
// ready); a tenant registered and limited through A while B runs holds on B's first request 1 s later (the
// change is announced to every process on the database). In turn: the admission API's first batch of 20 at
// PROVISIONING 5/s burst 10 admits 10, and the first ingest request of 500 readings against an INGEST burst of
// 100 is 413. Both once with the replicas metering alone (no REDIS_URL) and, when REDIS_URL is set, once on shared
// counters (docs/scaling.md) under a key prefix of their own: the batch is then admitted as far as the shared
// bucket's tokens allow (issue 34), 10 of 20 at burst 10, even though neither replica holds a slice of that tenant
// yet. It skips, naming what is missing, without PostgreSQL or a current dist/ (the Redis run without Redis).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/token.ts';
import { postAnswer } from '../support/postAnswer.ts';
import { postgresOnly, type TestDb } from '../support/databases.ts';
import { freePort } from '../support/privateServers.ts';
import { compiledServiceMissing, startReplica, tcpAnswers, type Replica } from '../support/replicas.ts';
import { waitFor } from '../support/waitFor.ts';

const JWT_SECRET = 'first-contact-suite-secret-0123456789abcdef';
/** The promise: a committed change is in force on every replica within this long. */
const PROPAGATION_MS = 1_000;

const missing: string[] = [];
if (!postgresOnly) missing.push('DATABASE_URL is not set');
const notBuilt = compiledServiceMissing();
if (notBuilt) missing.push(notBuilt);
if (missing.length > 0) console.warn(`first-contact suite skipped: ${missing.join('; ')}`);

const redisUrl = process.env.REDIS_URL;
let redisMissing: string | undefined;
if (!redisUrl) redisMissing = 'REDIS_URL is not set';
else if (!(await tcpAnswers(redisUrl, 6379))) redisMissing = `Redis does not answer at ${new URL(redisUrl).host}`;
if (redisMissing && missing.length === 0) console.warn(`first-contact suite on shared counters skipped: ${redisMissing}`);

interface Decision {
  admitted: boolean;
  source: string;
}

/** The suite, with the replicas metering alone (`redis` undefined) or sharing counters on Redis. */
const firstContactSuite = (redis: string | undefined) => () => {
  let testDb: TestDb;
  const replicas: Replica[] = [];
  let a: Replica;
  let operator: string;
  let service: string;
  // Both replicas of a run share one prefix; no other run (nor an earlier one) shares it.
  const keyPrefix = `gl-first-contact-${randomBytes(5).toString('hex')}:`;

  const start = async (name: string) => {
    const replica = await startReplica({
      name,
      port: await freePort(),
      grpcPort: await freePort(),
      env: { ...testDb.env!, GOVERNANCE_JWT_SECRET: JWT_SECRET, GOVERNANCE_DRAIN_SECONDS: '0', GOVERNANCE_PROJECTION_WORKERS: 'off', MQTT_URL: '', REDIS_URL: redis ?? '', GOVERNANCE_REDIS_KEY_PREFIX: keyPrefix },
    });
    replicas.push(replica);
    await waitFor(() => replica.ready(), { timeoutMs: 90_000, intervalMs: 200, description: `replica ${name} ready` });
    return replica;
  };

  const mutate = async (replica: Replica, field: string, input: Record<string, unknown>) => {
    const answer = await postAnswer(
      replica.baseUrl,
      '/graphql',
      { authorization: `Bearer ${operator}` },
      JSON.stringify({ query: `mutation ($input: ${field[0]!.toUpperCase()}${field.slice(1)}Input!) { ${field}(input: $input) { __typename } }`, variables: { input } }),
    );
    expect(answer.body, `${field} ${JSON.stringify(input)}`).toContain('"Applied"');
  };

  const limitTenant = async (replica: Replica, tenantId: string) => {
    await mutate(replica, 'registerTenant', { tenantId });
    await mutate(replica, 'setTenantOverride', { tenantId, dimension: 'PROVISIONING', ratePerSecond: 5, burst: 10, reason: 'provisioning storm' });
    await mutate(replica, 'setTenantOverride', { tenantId, dimension: 'INGEST', ratePerSecond: 50, burst: 100, reason: 'small plan' });
  };

  /** The first contact with `tenantId` on `replica`: a batch of 20 admissions, then 500 readings at HTTP ingest. */
  const firstContact = async (replica: Replica, tenantId: string) => {
    const items = Array.from({ length: 20 }, () => ({ tenantId, dimension: 'PROVISIONING', units: 1 }));
    const admissions = await postAnswer(replica.baseUrl, '/v1/admissions', { authorization: `Bearer ${service}` }, JSON.stringify({ items }));
    expect(admissions.status, admissions.body).toBe(200);
    const decisions = (JSON.parse(admissions.body) as { decisions: Decision[] }).decisions;
    const readings = Array.from({ length: 500 }, (_, i) => ({ measurements: { pressure: i } }));
    const ingest = await postAnswer(replica.baseUrl, `/v1/ingest/${tenantId}`, { 'x-device-key': 'not-a-key' }, JSON.stringify({ readings }));
    return { admitted: decisions.filter((decision) => decision.admitted).length, sources: new Set(decisions.map((d) => d.source)), ingest };
  };

  beforeAll(async () => {
    testDb = await postgresOnly!.open();
    operator = await mintToken({ secret: JWT_SECRET, role: 'OPERATOR', sub: 'first-contact-suite', ttl: '30m' });
    service = await mintToken({ secret: JWT_SECRET, role: 'SERVICE', sub: 'provisioning-service', ttl: '30m' });
    a = await start('a');
  }, 180_000);

  afterAll(async () => {
    await Promise.all(replicas.map((replica) => replica.dispose()));
    await testDb?.dispose();
  });

  it('holds a limit set before the other process started, on its first request', async () => {
    await limitTenant(a, 'early-acme');
    const b = await start('b');
    const first = await firstContact(b, 'early-acme');
    expect(first.admitted).toBe(10);
    expect([...first.sources]).toEqual(['TENANT_OVERRIDE']);
    expect(first.ingest.status, first.ingest.body).toBe(413);
  }, 180_000);

  it('holds a limit set while the other process runs, on its first request 1 s later', async () => {
    const b = replicas[1]!;
    await limitTenant(a, 'late-acme');
    // The promise runs from the change's commit (docs/governance-model.md, "When a limit takes effect"), which
    // the projection makes after the command returns: under load its lag alone can pass 1 s, and it is bounded
    // apart (/readyz). So the second counts from the moment this test first reads the last change in the read
    // model, that is, at most one poll and one query after its commit.
    let committedMs = 0;
    await waitFor(
      async () => {
        const { rows } = await testDb.db.query(`SELECT 1 FROM gl_tenant_overrides WHERE tenant_id = 'late-acme' AND dimension = 'INGEST'`);
        committedMs = performance.now();
        return rows.length === 1;
      },
      { timeoutMs: 40_000, intervalMs: 10, description: 'the INGEST override of late-acme committed by the projection' },
    );
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, committedMs + PROPAGATION_MS - performance.now())));
    const first = await firstContact(b, 'late-acme');
    expect(first.admitted).toBe(10);
    expect([...first.sources]).toEqual(['TENANT_OVERRIDE']);
    expect(first.ingest.status, first.ingest.body).toBe(413);
  }, 60_000);
};

describe.skipIf(missing.length > 0)('a limit set in one process, enforced by another on first contact', firstContactSuite(undefined));
describe.skipIf(missing.length > 0 || redisMissing !== undefined)(
  'a limit set in one process, enforced by another on first contact, on shared counters (Redis)',
  firstContactSuite(redisUrl),
);
