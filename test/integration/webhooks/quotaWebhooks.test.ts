// Quota notices reach a webhook through the ledger: a Governor counting a daily quota of 1,000 notices 50, 80 and
// 100 %, the notice writer records each once (two replicas noticing the same crossing store one event), the
// outbox projection queues a delivery per webhook, and delivery POSTs each, signed, to a real HTTP server. A
// deliverer stopped mid-delivery (its POST unanswered, as a killed process leaves it) and a restarted projection
// lose nothing: a new deliverer sends it again under the same delivery id once the lease lapses.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnEachStorage, type TestDb } from '../../support/databases.ts';
import { waitFor } from '../../support/waitFor.ts';
import { Governor } from '../../../src/governance/index.ts';
import { createPostgresEventStore, type EventStore } from '../../../src/ledger/index.ts';
import { startProjections } from '../../../src/ledger/projectionSet.ts';
import { createQuotaNoticeWriter, QUOTA_NOTICES_STREAM } from '../../../src/quotas/index.ts';
import {
  DELIVERY_HEADER,
  registerWebhook,
  SIGNATURE_HEADER,
  startWebhookDelivery,
  verifySignature,
  webhookDeliveries,
  webhookOutboxProjection,
} from '../../../src/webhooks/index.ts';
import { MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';

interface Received {
  deliveryId: string;
  body: { id: string; type: string; data: { thresholdPercent: number; tenantId: string } };
  signed: boolean;
}

const SECRET = 'a-secret-of-24-characters';

describeOnEachStorage('quota notices to webhooks on $name', (target) => {
  let testDb: TestDb;
  let store: EventStore;
  let server: Server;
  let url: string;
  const received: Received[] = [];
  /** While set, the receiver holds requests unanswered (a slow receiver, or one a deliverer dies waiting for). */
  let holding: ServerResponse[] | null = null;

  beforeAll(async () => {
    testDb = await target.open();
    store = createPostgresEventStore(testDb.db);
    server = createServer((request: IncomingMessage, response: ServerResponse) => {
      let text = '';
      request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      request.on('end', () => {
        if (holding !== null) return void holding.push(response);
        received.push({
          deliveryId: String(request.headers[DELIVERY_HEADER.toLowerCase()]),
          body: JSON.parse(text) as Received['body'],
          signed: verifySignature(SECRET, String(request.headers[SIGNATURE_HEADER.toLowerCase()]), text),
        });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/quota`;
  });

  afterAll(async () => {
    for (const response of holding ?? []) response.destroy();
    await new Promise((resolve) => server.close(resolve));
    await store.close();
    await testDb.dispose();
  });

  it('delivers the 80 % and 100 % notices once each, signed, across a deliverer stopped mid-delivery and a restart', async () => {
    expect(await registerWebhook(testDb.db, 'operator:test', { url: 'ftp://x', secret: SECRET, events: ['QuotaThresholdCrossed'] })).toMatchObject({
      status: 'refused',
      field: 'url',
    });
    expect(await registerWebhook(testDb.db, 'operator:test', { url, secret: 'short', events: ['QuotaThresholdCrossed'] })).toMatchObject({ field: 'secret' });
    const registered = await registerWebhook(testDb.db, 'operator:test', { url, secret: SECRET, events: ['QuotaThresholdCrossed'], tenantId: 'acme' });
    expect(registered.status).toBe('registered');
    const webhookId = (registered as { webhookId: string }).webhookId;

    let projections = await startProjections(testDb.db, store, [webhookOutboxProjection]);
    const writer = createQuotaNoticeWriter(store);
    const source = new MemoryLimitSource().tenant('acme', { INGEST: { override: { ratePerSecond: 100_000, burst: 100_000, quota: { period: 'DAY', limit: 1000 } } } });
    // Two replicas counting alone (no Redis), each noticing the same crossings: the ledger keeps one of each.
    const replicas = [0, 1].map(() => new Governor({ limitSource: source, onQuotaThreshold: (crossing) => writer.notice(crossing) }));
    for (const governor of replicas) governor.learnLimits(source.records.values(), {});
    const at = Date.now();
    for (const governor of replicas) {
      for (let i = 0; i < 1000; i++) expect(governor.decide({ tenant: 'acme', dimension: 'INGEST', allowance: 'LIVE', units: 1, at }).admitted).toBe(true);
    }
    await writer.flush();
    const notices = await store.readStream(QUOTA_NOTICES_STREAM);
    expect(notices.map((event) => (event.data as { thresholdPercent: number }).thresholdPercent)).toEqual([50, 80, 100]);

    // The first deliverer's POSTs are held unanswered, then it is stopped, as a killed process would leave them.
    holding = [];
    await projections.waitForCaughtUp({ timeoutMs: 60_000 });
    const clock = { ms: Date.now() };
    // Its database calls fail from the kill on: nothing it learns afterwards is recorded, as with a dead process.
    let killed = false;
    const db = testDb.db;
    const killable = Object.assign(Object.create(db) as typeof db, {
      query: ((sql: string, params?: readonly unknown[]) => (killed ? Promise.reject(new Error('killed')) : db.query(sql, params))) as typeof db.query,
    });
    const first = startWebhookDelivery({ db: killable, now: () => clock.ms, timeoutMs: 60_000, pollMs: 50 });
    await waitFor(() => holding!.length === 3, { description: 'the three deliveries under way' });
    killed = true;
    void first.close();
    for (const response of holding.splice(0)) response.destroy();
    holding = null;
    // Restart the projection too: its checkpoint is in the database, nothing is queued twice.
    await projections.close();
    projections = await startProjections(testDb.db, store, [webhookOutboxProjection]);
    await projections.waitForCaughtUp({ timeoutMs: 60_000 });

    // Once the lease of the stopped deliverer lapses, another delivers each notice.
    clock.ms += 60_000 + 5_001;
    const second = startWebhookDelivery({ db: testDb.db, now: () => clock.ms, pollMs: 50 });
    await waitFor(() => received.length >= 3, { description: 'three deliveries received' });
    await second.close();
    await projections.close();
    await writer.close();
    for (const governor of replicas) await governor.close();

    expect(received.map((each) => each.body.data.thresholdPercent).sort((a, b) => a - b)).toEqual([50, 80, 100]);
    expect(received.filter((each) => each.body.data.thresholdPercent === 80)).toHaveLength(1);
    expect(received.filter((each) => each.body.data.thresholdPercent === 100)).toHaveLength(1);
    expect(received.every((each) => each.signed && each.deliveryId === each.body.id && each.body.type === 'QuotaThresholdCrossed')).toBe(true);
    const log = await webhookDeliveries(testDb.db, webhookId);
    expect(log.map((each) => each.status)).toEqual(['DELIVERED', 'DELIVERED', 'DELIVERED']);
    expect(log.every((each) => each.attempts === 1 && each.lastStatusCode === 204)).toBe(true);
  });

  it('tries a refused delivery again with backoff, and gives up 24 hours after the notice', async () => {
    let answer = 500;
    const statuses: number[] = [];
    const refusing = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        statuses.push(answer);
        response.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    try {
      const hookUrl = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/`;
      const registered = await registerWebhook(testDb.db, 'operator:test', { url: hookUrl, secret: SECRET, events: ['QuotaThresholdCrossed'], tenantId: 'initech' });
      const webhookId = (registered as { webhookId: string }).webhookId;
      const writer = createQuotaNoticeWriter(store);
      const at = Date.now();
      for (const [threshold, tenantId] of [[50, 'initech'], [80, 'initech']] as const) {
        writer.notice({ tenantId, dimension: 'INGEST', thresholdPercent: threshold, period: 'DAY', periodStartMs: at - 1000, periodEndMs: at + 86_400_000, limit: 10, used: threshold / 10 });
      }
      await writer.close();
      const projections = await startProjections(testDb.db, store, [webhookOutboxProjection]);
      await projections.waitForCaughtUp({ timeoutMs: 60_000 });
      await projections.close();
      const clock = { ms: Date.now() };
      const delivery = startWebhookDelivery({ db: testDb.db, now: () => clock.ms, pollMs: 20, timeoutMs: 2000 });
      const log = () => webhookDeliveries(testDb.db, webhookId);
      await waitFor(async () => (await log()).every((each) => each.attempts === 1), { description: 'a first, refused attempt of each' });
      expect((await log()).map((each) => [each.status, each.lastStatusCode])).toEqual([['PENDING', 500], ['PENDING', 500]]);
      // Not due again before its backoff (10 s); due after it.
      clock.ms += 5_000;
      expect(await delivery.runOnce()).toBe(0);
      answer = 204;
      clock.ms += 6_000;
      await waitFor(async () => (await log()).every((each) => each.status === 'DELIVERED'), { description: 'both delivered on the second attempt' });
      expect((await log()).map((each) => each.attempts)).toEqual([2, 2]);
      await delivery.close();

      // A notice still refused when its next try would fall past 24 hours is given up as FAILED.
      answer = 500;
      const late = createQuotaNoticeWriter(store);
      late.notice({ tenantId: 'initech', dimension: 'INGEST', thresholdPercent: 100, period: 'DAY', periodStartMs: at - 1000, periodEndMs: at + 86_400_000, limit: 10, used: 10 });
      await late.close();
      const again = await startProjections(testDb.db, store, [webhookOutboxProjection]);
      await again.waitForCaughtUp({ timeoutMs: 60_000 });
      await again.close();
      clock.ms += 25 * 3600 * 1000;
      const lateDelivery = startWebhookDelivery({ db: testDb.db, now: () => clock.ms, pollMs: 20, timeoutMs: 2000 });
      await waitFor(async () => (await log()).some((each) => each.status === 'FAILED'), { description: 'the late notice given up' });
      await lateDelivery.close();
      expect((await log()).map((each) => each.status).sort()).toEqual(['DELIVERED', 'DELIVERED', 'FAILED']);
    } finally {
      await new Promise((resolve) => refusing.close(resolve));
    }
  });
});
