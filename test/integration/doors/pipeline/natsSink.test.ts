// Runs against the machine's real NATS with JetStream (NATS_URL, default 127.0.0.1:4222); skipped, and said
// so, when no server answers.
import { randomBytes } from 'node:crypto';
import { connect, JSONCodec, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNatsSink, ENVELOPE_RESERVE_BYTES, subjectFor } from '../../../../src/doors/pipeline/natsSink.ts';
import type { AcceptedBatch } from '../../../../src/doors/pipeline/sink.ts';
import { natsReachable, natsUrl } from '../../../support/nats.ts';
import { waitFor } from '../../../support/waitFor.ts';

const reachable = await natsReachable('the NATS sink suite');

describe.skipIf(!reachable)('NATS JetStream sink', () => {
  const suffix = randomBytes(4).toString('hex');
  const stream = `GL_TEST_INGEST_${suffix}`;
  const subjectPrefix = `gltest.${suffix}.ingest`;
  let reader: NatsConnection;

  beforeAll(async () => {
    reader = await connect({ servers: natsUrl });
  });
  afterAll(async () => {
    const manager = await reader.jetstreamManager();
    await manager.streams.delete(stream).catch(() => {});
    await reader.close();
  });

  const batch = (requestId: string, tenantId = 'acme'): AcceptedBatch => ({
    tenantId,
    route: 'http',
    credential: { kind: 'device', subject: 'pump-7' },
    requestId,
    receivedAtMs: 1_764_400_000_000,
    units: 2,
    items: [{ deviceId: 'pump-7', measurements: { t: 1, p: 2 } }],
  });

  it('creates the stream when missing and stores each batch once, on the tenant subject, by request ID', async () => {
    const sink = await createNatsSink({ url: natsUrl, stream, subjectPrefix });
    await sink.publish(batch('req-1'));
    await sink.publish(batch('req-1'));
    await sink.publish(batch('req-2', 'tenant.with*dots'));
    await sink.close();

    const manager = await reader.jetstreamManager();
    const info = await manager.streams.info(stream);
    expect(info.state.messages).toBe(2);
    const first = await manager.streams.getMessage(stream, { seq: 1 });
    expect(first.subject).toBe(`${subjectPrefix}.acme`);
    expect(first.header.get('X-Request-ID')).toBe('req-1');
    expect(first.header.get('Nats-Msg-Id')).toBe('http:acme:req-1');
    expect(JSONCodec<AcceptedBatch>().decode(first.data)).toEqual(batch('req-1'));
    const second = await manager.streams.getMessage(stream, { seq: 2 });
    expect(second.subject).toBe(`${subjectPrefix}.tenant%2Ewith%2Adots`);
  });

  it('reuses an existing stream', async () => {
    const sink = await createNatsSink({ url: natsUrl, stream, subjectPrefix });
    await sink.publish(batch('req-3'));
    await sink.close();
    expect((await (await reader.jetstreamManager()).streams.info(stream)).state.messages).toBe(3);
  });

  it('answers duplicate for a message ID it stored before, and no tenant can choose an ID that drops another tenant\'s', async () => {
    const sink = await createNatsSink({ url: natsUrl, stream, subjectPrefix });
    const before = (await (await reader.jetstreamManager()).streams.info(stream)).state.messages;
    expect(await sink.publish(batch('shared-id', 'alpha'))).toEqual({ status: 'stored' });
    expect(await sink.publish(batch('shared-id', 'alpha'))).toEqual({ status: 'duplicate' });
    // The same X-Request-ID from another tenant is another message.
    expect(await sink.publish(batch('shared-id', 'beta'))).toEqual({ status: 'stored' });
    await sink.close();
    expect((await (await reader.jetstreamManager()).streams.info(stream)).state.messages).toBe(before + 2);
  });

  it('refuses, as an answer and without publishing, a batch larger than max_payload with its envelope or one that cannot be written as JSON', async () => {
    const sink = await createNatsSink({ url: natsUrl, stream, subjectPrefix });
    const maxPayload = sink.connection().info!.max_payload;
    // The body cap the doors take from it leaves room for the envelope.
    expect(sink.maxBodyBytes!()).toBe(maxPayload - ENVELOPE_RESERVE_BYTES);
    const before = (await (await reader.jetstreamManager()).streams.info(stream)).state.messages;

    const large = { ...batch('too-large'), items: [{ measurements: { blob: 'x'.repeat(maxPayload) } }] };
    const tooLarge = await sink.publish(large);
    expect(tooLarge).toMatchObject({ status: 'refused', reason: 'too-large' });

    // 100,000 levels deep: JSON.stringify overflows its stack on it.
    let deep: Record<string, unknown> = {};
    for (let level = 0; level < 100_000; level++) deep = { v: deep };
    const unserialisable = await sink.publish({ ...batch('too-deep'), items: [{ measurements: { deep } }] });
    expect(unserialisable).toMatchObject({ status: 'refused', reason: 'unserialisable' });

    // Neither held anything up: the next batch is stored at once.
    expect(await sink.publish(batch('after-refusals'))).toEqual({ status: 'stored' });
    await sink.close();
    expect((await (await reader.jetstreamManager()).streams.info(stream)).state.messages).toBe(before + 1);
  });

  it('makes a new connection when its connection closes, and says it is unavailable until then', async () => {
    const sink = await createNatsSink({ url: natsUrl, stream, subjectPrefix });
    expect(sink.unavailable!()).toBeNull();
    const first = sink.connection();
    // Closed under the sink, as a server that refuses the connection closes it: nats.js never reconnects a closed one.
    await first.close();
    // The sink waits half a second before its first new connection.
    await waitFor(() => sink.unavailable!() !== null, { timeoutMs: 400, intervalMs: 5, description: 'the sink to notice the closed connection' });
    expect(sink.unavailable!()).toMatch(/reading sink \(NATS JetStream at .*\) is disconnected/);
    await expect(sink.publish(batch('while-closed'))).rejects.toThrow(/not connected/);
    await waitFor(() => sink.unavailable!() === null, { timeoutMs: 10_000, description: 'a new connection' });
    expect(sink.connection()).not.toBe(first);
    expect(await sink.publish(batch('after-new-connection'))).toEqual({ status: 'stored' });
    await sink.close();
    expect(sink.unavailable!()).toBe('the NATS sink is closed');
  });

  it('no tenant name can leave its own subject token', () => {
    expect(subjectFor('p', 'a.b')).toBe('p.a%2Eb');
    expect(subjectFor('p', '>')).toBe('p.%3E');
    expect(subjectFor('p', 'a b')).toBe('p.a%20b');
    expect(subjectFor('p', '100%')).toBe('p.100%25');
  });
});
