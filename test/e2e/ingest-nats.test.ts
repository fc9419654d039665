// Readings accepted at the front door land in NATS JetStream: real HTTP in, the machine's real NATS out, on a
// stream and subject of the test's own. Skipped, and said so, when NATS does not answer.
import { randomBytes } from 'node:crypto';
import { connect, JSONCodec, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEdgeLimit } from '../../src/doors/pipeline/edgeLimit.ts';
import { createNatsSink } from '../../src/doors/pipeline/natsSink.ts';
import type { AcceptedBatch } from '../../src/doors/pipeline/sink.ts';
import { storageTargets, type TestDb } from '../support/databases.ts';
import { readingsBody, startFrontDoor, TableLimitSource, type RunningFrontDoor } from '../integration/doors/http/frontDoorHarness.ts';
import { natsReachable, natsUrl } from '../support/nats.ts';

const reachable = await natsReachable('the ingest-to-JetStream suite');

describe.skipIf(!reachable)('ingest front door to NATS JetStream', () => {
  const suffix = randomBytes(4).toString('hex');
  const stream = `GL_E2E_INGEST_${suffix}`;
  const subjectPrefix = `gle2e.${suffix}.ingest`;
  let testDb: TestDb;
  let door: RunningFrontDoor;
  let reader: NatsConnection;
  let key: string;

  beforeAll(async () => {
    testDb = await storageTargets[0]!.open();
    reader = await connect({ servers: natsUrl });
    const sink = await createNatsSink({ url: natsUrl, stream, subjectPrefix });
    door = await startFrontDoor({
      db: testDb.db,
      limits: new TableLimitSource().tenant('acme', {}),
      edgeLimit: createEdgeLimit({ ratePerSecond: 1000 }),
      sink,
    });
    key = await door.register({ tenantId: 'acme', kind: 'device', subject: 'pump-7' });
  }, 180_000);

  afterAll(async () => {
    await door?.close();
    await door?.sink.close();
    await (await reader.jetstreamManager()).streams.delete(stream).catch(() => {});
    await reader.close();
    await testDb?.dispose();
  });

  it('202 means the batch is stored in the stream, on the tenant subject, under the request ID', async () => {
    const response = await fetch(`${door.baseUrl}/v1/ingest/acme`, {
      method: 'POST',
      body: readingsBody(3, 'pump-7'),
      headers: { 'content-type': 'application/json', 'x-device-key': key, 'x-request-id': `nats-${suffix}` },
    });
    expect(response.status).toBe(202);
    expect(await response.json()).toMatchObject({ accepted: 3 });

    const manager = await reader.jetstreamManager();
    expect((await manager.streams.info(stream)).state.messages).toBe(1);
    const stored = await manager.streams.getMessage(stream, { seq: 1 });
    expect(stored.subject).toBe(`${subjectPrefix}.acme`);
    const batch = JSONCodec<AcceptedBatch>().decode(stored.data);
    expect(batch).toMatchObject({
      tenantId: 'acme',
      route: 'http',
      credential: { kind: 'device', subject: 'pump-7' },
      requestId: `nats-${suffix}`,
      units: 3,
    });
    expect(batch.items).toHaveLength(3);
  });

  it('a refused request publishes nothing', async () => {
    const response = await fetch(`${door.baseUrl}/v1/ingest/acme`, { method: 'POST', body: readingsBody(1), headers: { 'x-device-key': 'wrong' } });
    expect(response.status).toBe(401);
    expect((await (await reader.jetstreamManager()).streams.info(stream)).state.messages).toBe(1);
  });
});
