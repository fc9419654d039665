// Issue 33's Done-when, end to end on the compiled service: one `governance serve` process (dist/, started as
// production starts it) on a PostgreSQL schema of its own, without Redis, so the daily quota is counted in the
// database (gl_quota_usage). A tenant with a daily INGEST quota of 10 readings and a webhook for its notices,
// received by a real HTTP server that never answers the first delivery it gets. Then:
// - readings with a wrong key are refused (401) and spend none of the quota;
// - readings one at a time: exactly 10 are admitted (202); the next is refused 429 with X-RateLimit-Scope: quota
//   and Retry-After to the period's reset (UTC midnight), the count in the database is 10, and the ledger's
//   summaries say 10 admitted;
// - the 50, 80 and 100 % notices are in the ledger and pushed to the quotaThresholdCrossed subscription (SSE,
//   the tenant's own viewer token), and while the first delivery is held open the service is
//   SIGKILLed, then started again on the same schema. After the restart the quota is still spent (a reading is
//   refused as above, never admitted on credit), and every notice is answered 2xx exactly once per delivery id,
//   each signed with HMAC-SHA256 over "<t>.<body>" (checked here with node:crypto), the held one redelivered
//   under the same X-Governance-Delivery id, and the delivery log says DELIVERED;
// - `governance usage export` for the month (the compiled CLI) matches the ledger's summaries exactly.
// It skips, naming what is missing, without PostgreSQL or a current dist/ (npm run build).
import { spawn } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { mintToken } from '../../src/auth/token.ts';
import { createControlPlane } from '../../src/control-plane/index.ts';
import type { EventStore } from '../../src/ledger/eventStore.ts';
import { openEventStore } from '../../src/ledger/openEventStore.ts';
import { postgresOnly, type TestDb } from '../support/databases.ts';
import { freePort } from '../support/privateServers.ts';
import { admissionEntriesOf, readWholeLedger } from '../support/readLedger.ts';
import { compiledServiceMissing, ROOT, startReplica, type Replica } from '../support/replicas.ts';
import { waitFor } from '../support/waitFor.ts';

const QUOTA = 10;
const JWT_SECRET = 'quota-webhook-restart-secret-0123456789abcdef';
const WEBHOOK_SECRET = 'webhook-secret-of-32-characters!';
const OPERATOR = { id: 'alice@ops', role: 'OPERATOR' as const };
const DAY_MS = 86_400_000;

const missing: string[] = [];
if (!postgresOnly) missing.push('DATABASE_URL is not set');
const notBuilt = compiledServiceMissing();
if (notBuilt) missing.push(notBuilt);
if (missing.length > 0) console.warn(`quota webhook restart suite skipped: ${missing.join('; ')}`);

interface Delivery {
  deliveryId: string;
  event: string;
  signature: string;
  text: string;
  body: { id: string; type: string; data: { tenantId: string; thresholdPercent: number; limit: number; used: number } };
  /** The 2xx it was answered with; null while held (never answered). */
  answered: number | null;
}

/** HMAC-SHA256 over "<t>.<body>" with the webhook's secret, as `t=<t>,v1=<hex>`: the receiver's own check. */
function signedBy(secret: string, header: string, text: string): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (!match) return false;
  const expected = createHmac('sha256', secret).update(`${match[1]}.${text}`).digest();
  return timingSafeEqual(expected, Buffer.from(match[2]!, 'hex'));
}

describe.skipIf(missing.length > 0)('a daily quota and its webhook notices across a SIGKILL (compiled service, PostgreSQL, no Redis)', () => {
  let storage: TestDb;
  let store: EventStore;
  let replica: Replica;
  let receiver: Server;
  let hookUrl: string;
  let deviceKey: string;
  let operator: string;
  const deliveries: Delivery[] = [];
  const held: ServerResponse[] = [];

  beforeAll(async () => {
    storage = await postgresOnly!.open({ max: 2 });
    store = await openEventStore(storage.db, undefined);
    // The tenant and its quota are in the ledger before the service starts.
    const controlPlane = createControlPlane({ db: storage.db, store });
    expect(await controlPlane.registerTenant(OPERATOR, { tenantId: 'acme' })).toMatchObject({ status: 'applied' });
    expect(
      await controlPlane.setTenantOverride(OPERATOR, {
        tenantId: 'acme',
        dimension: 'INGEST',
        ratePerSecond: 1000,
        burst: 1000,
        quota: { period: 'DAY', limit: QUOTA, timeZone: 'UTC' },
        reason: `plan: ${QUOTA} readings a day`,
      }),
    ).toMatchObject({ status: 'applied' });
    const registered = await registerIngestCredential(storage.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    deviceKey = registered.key;

    // The receiver: the first delivery it gets is held open and never answered; every later one gets 204.
    receiver = createServer((request: IncomingMessage, response: ServerResponse) => {
      let text = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (text += chunk));
      request.on('end', () => {
        const delivery: Delivery = {
          deliveryId: String(request.headers['x-governance-delivery']),
          event: String(request.headers['x-governance-event']),
          signature: String(request.headers['x-governance-signature']),
          text,
          body: JSON.parse(text) as Delivery['body'],
          answered: null,
        };
        deliveries.push(delivery);
        if (deliveries.length === 1) return void held.push(response);
        delivery.answered = 204;
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/quota`;

    replica = await startReplica({
      name: 'quota',
      port: await freePort(),
      grpcPort: await freePort(),
      env: {
        ...storage.env!,
        // Without Redis: the quota is counted in the database.
        REDIS_URL: '',
        NATS_URL: '',
        MQTT_URL: '',
        EVENTSTORE_URL: '',
        GOVERNANCE_JWT_SECRET: JWT_SECRET,
        LOG_LEVEL: 'info',
      },
    });
    await waitFor(() => replica.ready(), { timeoutMs: 90_000, intervalMs: 200, description: 'the service ready' });
    operator = await mintToken({ secret: JWT_SECRET, role: 'OPERATOR', sub: 'ops-alice', ttl: '1h' });
  }, 200_000);

  afterAll(async () => {
    for (const response of held) response.destroy();
    await replica?.dispose();
    if (receiver) await new Promise((resolve) => receiver.close(resolve));
    await store?.close();
    await storage?.dispose();
  });

  async function graphql<T>(query: string): Promise<T> {
    const response = await fetch(`${replica.baseUrl}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${operator}` },
      body: JSON.stringify({ query }),
    });
    const body = (await response.json()) as { data?: T; errors?: unknown[] };
    if (!body.data || body.errors) throw new Error(JSON.stringify(body));
    return body.data;
  }

  /**
   * One reading, sent again while the answer is 429 with Retry-After: 1 (the service's slice of the quota on its
   * way: a client told to retry in a second does so). The answer that is not such a wait.
   */
  async function postReading(): Promise<Response> {
    for (let attempt = 0; attempt < 30; attempt++) {
      const response = await fetch(`${replica.baseUrl}/v1/ingest/acme`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-device-key': deviceKey },
        body: JSON.stringify({ readings: [{ deviceId: 'pump-1', measurements: { level: attempt } }] }),
      });
      await response.arrayBuffer();
      if (!(response.status === 429 && response.headers.get('retry-after') === '1')) return response;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    throw new Error('still told to wait after 30 tries');
  }

  /** Opens the quotaThresholdCrossed subscription over SSE and collects what it pushes. */
  async function subscribeToNotices(): Promise<{ notices: Array<{ tenantId: string; thresholdPercent: number; limit: number }>; close(): Promise<void> }> {
    const viewer = await mintToken({ secret: JWT_SECRET, role: 'TENANT_VIEWER', tenant: 'acme', sub: 'viewer-acme', ttl: '1h' });
    const response = await fetch(`${replica.baseUrl}/graphql`, {
      method: 'POST',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json', authorization: `Bearer ${viewer}` },
      body: JSON.stringify({ query: 'subscription { quotaThresholdCrossed(tenantId: "acme") { tenantId thresholdPercent limit } }' }),
    });
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    const notices: Array<{ tenantId: string; thresholdPercent: number; limit: number }> = [];
    const reading = (async () => {
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const data = /^data: (.*)$/m.exec(buffer.slice(0, end))?.[1];
          buffer = buffer.slice(end + 2);
          const notice = data ? (JSON.parse(data) as { data?: { quotaThresholdCrossed?: (typeof notices)[number] } }).data?.quotaThresholdCrossed : undefined;
          if (notice) notices.push(notice);
        }
      }
    })();
    return {
      notices,
      async close() {
        await reader.cancel();
        await reading;
      },
    };
  }

  function expectQuotaRefusal(response: Response, sentAt: number): void {
    expect(response.status).toBe(429);
    expect(response.headers.get('x-ratelimit-scope')).toBe('quota');
    // To the next UTC midnight (the quota's time zone), not to the next token of the rate.
    const toReset = (Math.ceil(sentAt / DAY_MS) * DAY_MS - sentAt) / 1000;
    expect(Math.abs(Number(response.headers.get('retry-after')) - toReset)).toBeLessThanOrEqual(2);
  }

  async function ledgerTotals(): Promise<{ admittedUnits: number; rejectedUnits: number; quotaRejectedUnits: number; shedUnits: number }> {
    const entries = admissionEntriesOf(await readWholeLedger(store)).filter((entry) => entry.tenantId === 'acme' && entry.dimension === 'INGEST');
    const sum = (field: 'admittedUnits' | 'rejectedUnits' | 'quotaRejectedUnits' | 'shedUnits') => entries.reduce((total, entry) => total + (entry[field] ?? 0), 0);
    return { admittedUnits: sum('admittedUnits'), rejectedUnits: sum('rejectedUnits'), quotaRejectedUnits: sum('quotaRejectedUnits'), shedUnits: sum('shedUnits') };
  }

  it('admits exactly the quota, and delivers each notice once per delivery id, signed, across a SIGKILL mid-delivery', async () => {
    const registered = await graphql<{ registerWebhook: { __typename: string; webhookId?: string } }>(
      `mutation { registerWebhook(input: { url: "${hookUrl}", secret: "${WEBHOOK_SECRET}", events: [QuotaThresholdCrossed], tenantId: "acme" }) { __typename ... on RegisteredWebhook { webhookId } } }`,
    );
    expect(registered.registerWebhook.__typename).toBe('RegisteredWebhook');
    // The service folds the control plane's events into its read models after it starts, and learns the quota
    // when they hold it (the projection's NOTIFY, docs/governance-model.md "When a limit takes effect").
    await waitFor(
      async () => {
        const { quotas } = await graphql<{ quotas: Array<{ quota: { limit: number } }> }>('{ quotas(tenantId: "acme") { quota { limit } } }');
        return quotas[0]?.quota.limit === QUOTA;
      },
      { timeoutMs: 30_000, intervalMs: 100, description: 'the quota in force' },
    );

    // The tenant's own view: the notices pushed over the quotaThresholdCrossed subscription (SSE).
    const pushed = await subscribeToNotices();

    // Readings sent with a wrong key are refused (401) and spend none of the quota.
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${replica.baseUrl}/v1/ingest/acme`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-device-key': 'not-a-key-of-acme' },
        body: JSON.stringify({ readings: [{ deviceId: 'intruder', measurements: { level: i } }] }),
      });
      await response.arrayBuffer();
      expect(response.status).toBe(401);
    }
    // Exactly the quota is admitted; the next reading is refused for the quota, with the time to the reset.
    let admitted = 0;
    for (let i = 0; i < QUOTA; i++) {
      const response = await postReading();
      expect(response.status, `reading ${i + 1}`).toBe(202);
      admitted++;
    }
    const sentAt = Date.now();
    expectQuotaRefusal(await postReading(), sentAt);
    expect(admitted).toBe(QUOTA);
    const usage = await storage.db.query<{ used: string }>(`SELECT used::text AS used FROM gl_quota_usage WHERE tenant_id = 'acme'`);
    expect(usage.rows).toEqual([{ used: String(QUOTA) }]);

    // The three notices are in the ledger, and the first delivery is held open when the service is killed.
    await waitFor(async () => (await store.readStream('quota-notices')).length === 3, { timeoutMs: 30_000, description: 'three notices in the ledger' });
    await waitFor(() => held.length === 1, { timeoutMs: 30_000, description: 'the first delivery held open by the receiver' });
    // What was decided is in the ledger before the kill (SIGKILL loses at most the last flush interval's).
    await waitFor(
      async () => {
        const totals = await ledgerTotals();
        return totals.admittedUnits === QUOTA && totals.quotaRejectedUnits >= 1;
      },
      { timeoutMs: 30_000, description: 'the admissions and the refusal in the ledger' },
    );
    await waitFor(() => pushed.notices.length === 3, { timeoutMs: 30_000, description: 'three notices pushed to the subscription' });
    expect(pushed.notices.map((notice) => notice.thresholdPercent).sort((a, b) => a - b)).toEqual([50, 80, 100]);
    expect(pushed.notices.every((notice) => notice.tenantId === 'acme' && notice.limit === QUOTA)).toBe(true);
    await pushed.close();
    const heldDelivery = deliveries[0]!;
    replica.child.kill('SIGKILL');
    expect(await replica.exited()).toMatchObject({ signal: 'SIGKILL' });
    for (const response of held.splice(0)) response.destroy();

    await replica.restart();
    await waitFor(() => replica.ready(), { timeoutMs: 90_000, intervalMs: 200, description: 'the service ready again' });
    // The quota holds across the restart: still spent, nothing admitted on credit.
    const afterRestart = Date.now();
    expectQuotaRefusal(await postReading(), afterRestart);
    expect((await storage.db.query<{ used: string }>(`SELECT used::text AS used FROM gl_quota_usage WHERE tenant_id = 'acme'`)).rows).toEqual([
      { used: String(QUOTA) },
    ]);

    // The held delivery is tried again once its lease lapses, under the same id; every notice is answered once.
    const answeredIds = () => new Set(deliveries.filter((each) => each.answered !== null).map((each) => each.deliveryId));
    await waitFor(() => answeredIds().size === 3, { timeoutMs: 60_000, intervalMs: 100, description: 'the three notices answered 2xx' });
    const answered = deliveries.filter((each) => each.answered !== null);
    expect(answered).toHaveLength(3);
    expect(answered.map((each) => each.body.data.thresholdPercent).sort((a, b) => a - b)).toEqual([50, 80, 100]);
    expect(answered.map((each) => each.deliveryId)).toContain(heldDelivery.deliveryId);
    expect(answered.find((each) => each.deliveryId === heldDelivery.deliveryId)!.text).toBe(heldDelivery.text);
    for (const delivery of deliveries) {
      expect(signedBy(WEBHOOK_SECRET, delivery.signature, delivery.text), delivery.signature).toBe(true);
      expect(signedBy('another-secret-of-24-chars', delivery.signature, delivery.text)).toBe(false);
      expect(delivery.deliveryId).toBe(delivery.body.id);
      expect(delivery.event).toBe('QuotaThresholdCrossed');
      expect(delivery.body.data).toMatchObject({ tenantId: 'acme', limit: QUOTA });
    }
    const hundred = answered.find((each) => each.body.data.thresholdPercent === 100)!;
    expect(hundred.body.data.used).toBe(QUOTA);
    const log = await graphql<{ webhooks: Array<{ deliveries: Array<{ eventId: string; status: string; lastStatusCode: number | null }> }> }>(
      '{ webhooks(tenantId: "acme") { deliveries { eventId status lastStatusCode } } }',
    );
    expect(log.webhooks[0]!.deliveries.map((each) => [each.status, each.lastStatusCode])).toEqual([
      ['DELIVERED', 204],
      ['DELIVERED', 204],
      ['DELIVERED', 204],
    ]);

    // The ledger: exactly the quota admitted; the refusals counted as rejected for the quota, none shed.
    let totals = await ledgerTotals();
    await waitFor(async () => (totals = await ledgerTotals()).quotaRejectedUnits >= 2, { timeoutMs: 30_000, description: 'both refusals in the ledger' });
    expect(totals).toEqual({ admittedUnits: QUOTA, rejectedUnits: totals.quotaRejectedUnits, quotaRejectedUnits: totals.quotaRejectedUnits, shedUnits: 0 });

    // The month's export, by the compiled CLI on the same database, matches the ledger's summaries exactly.
    const now = new Date();
    const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    const exported = await usageExport(['--from', monthStart.toISOString(), '--to', nextMonth.toISOString(), '--granularity', 'MONTH', '--format', 'ndjson', '--tenant', 'acme']);
    const rows = exported.filter((row) => row.dimension === 'INGEST');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      tenantId: 'acme',
      admittedUnits: totals.admittedUnits,
      shedUnits: totals.shedUnits,
      rejectedUnits: totals.rejectedUnits,
      quotaRejectedUnits: totals.quotaRejectedUnits,
    });
    // The day's row carries the daily quota: all of it used, none left.
    const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
    const daily = await usageExport(['--from', today.toISOString(), '--to', new Date(today.getTime() + DAY_MS).toISOString(), '--format', 'ndjson', '--tenant', 'acme']);
    expect(daily.filter((row) => row.dimension === 'INGEST')).toEqual([
      expect.objectContaining({ admittedUnits: QUOTA, quotaLimit: QUOTA, quotaUsed: QUOTA, quotaLeft: 0 }),
    ]);

    async function usageExport(args: string[]): Promise<Array<Record<string, unknown>>> {
      const dataDir = await mkdtemp(path.join(tmpdir(), 'gl-usage-export-'));
      const child = spawn(process.execPath, [path.join(ROOT, 'bin/governance.js'), 'usage', 'export', ...args], {
        cwd: ROOT,
        env: { ...process.env, ...storage.env!, GOVERNANCE_RUN_SOURCES: '', REDIS_URL: '', EVENTSTORE_URL: '', GOVERNANCE_DATA_DIR: dataDir },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      await rm(dataDir, { recursive: true, force: true });
      expect(code, err).toBe(0);
      return out
        .trim()
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    }
  }, 240_000);
});
