// The required behaviour of a CommandBacklog, run against each implementation (the database-transaction
// path and the stream-revision path) on each storage target.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { commandsStream } from '../../../src/ledger/catalog/commands.ts';
import type { CeilingSource, CommandBacklog } from '../../../src/commands/types.ts';
import { DEFAULT_RETRY_AFTER_SECONDS } from '../../../src/commands/retryAfter.ts';
import { MAX_PAYLOAD_BYTES } from '../../../src/commands/validateCommand.ts';
import { storageTargets, type TestDb } from '../../support/databases.ts';
import { createCeilingTable, setCeiling, tableCeilings } from './ceilingTable.ts';

export type BacklogFactory = (settings: {
  db: Db;
  store: EventStore;
  ceilings: CeilingSource;
  commandTtlMs: number;
  now: () => Date;
}) => CommandBacklog;

const actor = { id: 'svc:command-delivery' };
const TTL_MS = 60_000;

export function describeCommandBacklog(name: string, makeBacklog: BacklogFactory) {
  describe.each(storageTargets)(`${name} on $name`, (target) => {
    let testDb: TestDb;
    let store: EventStore;
    let backlog: CommandBacklog;
    let clock: Date;

    const enqueue = (commandId: string, tenantId = 'acme', payload: unknown = { op: 'open' }) =>
      backlog.enqueue(actor, { tenantId, commandId, deviceId: 'dev-1', payload });
    const events = async (tenantId = 'acme') => (await store.readStream(commandsStream(tenantId))).map((event) => event.type);

    beforeEach(async () => {
      testDb = await target.open();
      store = createPostgresEventStore(testDb.db);
      await createCeilingTable(testDb.db);
      await setCeiling(testDb.db, 'acme', 3);
      clock = new Date('2026-01-01T00:00:00Z');
      backlog = makeBacklog({ db: testDb.db, store, ceilings: tableCeilings, commandTtlMs: TTL_MS, now: () => clock });
    });

    afterEach(async () => {
      await store.close();
      await testDb.dispose();
    });

    it('accepts up to the ceiling, then refuses retryably, recording every decision', async () => {
      expect(await enqueue('c1')).toEqual({ status: 'accepted', commandId: 'c1', undelivered: 1, ceiling: 3 });
      await enqueue('c2');
      expect(await enqueue('c3')).toEqual({ status: 'accepted', commandId: 'c3', undelivered: 3, ceiling: 3 });
      expect(await enqueue('c4')).toEqual({
        status: 'rejected',
        commandId: 'c4',
        reason: 'CEILING_REACHED',
        retryable: true,
        retryAfterSeconds: DEFAULT_RETRY_AFTER_SECONDS,
        undelivered: 3,
        ceiling: 3,
      });
      expect(await events()).toEqual(['CommandEnqueued', 'CommandEnqueued', 'CommandEnqueued', 'CommandRejected']);
      const [first] = await store.readStream(commandsStream('acme'));
      expect(first!.data).toMatchObject({ tenantId: 'acme', commandId: 'c1', deviceId: 'dev-1', payload: { op: 'open' }, ceilingSource: 'TIER' });
      expect(first!.metadata).toMatchObject({ actor: actor.id, occurredAt: clock.toISOString() });
    });

    it('answers a repeated commandId with its first acceptance and counts it once', async () => {
      await enqueue('c1');
      await enqueue('c2');
      expect(await enqueue('c1')).toEqual({ status: 'accepted', commandId: 'c1', undelivered: 1, ceiling: 3 });
      expect(await enqueue('c3')).toMatchObject({ status: 'accepted', undelivered: 3 });
      expect(await events()).toEqual(['CommandEnqueued', 'CommandEnqueued', 'CommandEnqueued']);
      await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'c1' });
      expect(await enqueue('c1')).toEqual({ status: 'accepted', commandId: 'c1', undelivered: 1, ceiling: 3 });
      expect(await enqueue('c4')).toMatchObject({ status: 'accepted', undelivered: 3 });
    });

    it('lets a refused commandId be enqueued again once there is room', async () => {
      for (const id of ['c1', 'c2', 'c3']) await enqueue(id);
      expect(await enqueue('c4')).toMatchObject({ status: 'rejected', reason: 'CEILING_REACHED' });
      expect(await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'c2' })).toEqual({ status: 'settled', commandId: 'c2', undelivered: 2 });
      expect(await enqueue('c4')).toEqual({ status: 'accepted', commandId: 'c4', undelivered: 3, ceiling: 3 });
    });

    it('refuses an unknown tenant, not retryably, and records it', async () => {
      expect(await enqueue('c1', 'nobody')).toEqual({
        status: 'rejected',
        commandId: 'c1',
        reason: 'UNKNOWN_TENANT',
        retryable: false,
        retryAfterSeconds: null,
        undelivered: 0,
        ceiling: null,
      });
      expect(await events('nobody')).toEqual(['CommandRejected']);
    });

    it('takes a command out of the backlog once, whichever way it leaves', async () => {
      for (const id of ['c1', 'c2', 'c3']) await enqueue(id);
      expect(await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'c1' })).toEqual({ status: 'settled', commandId: 'c1', undelivered: 2 });
      expect(await backlog.markFailed(actor, { tenantId: 'acme', commandId: 'c2', error: 'device offline' })).toEqual({
        status: 'settled',
        commandId: 'c2',
        undelivered: 1,
      });
      expect(await backlog.cancel(actor, { tenantId: 'acme', commandId: 'c3', reason: 'operator aborted' })).toEqual({
        status: 'settled',
        commandId: 'c3',
        undelivered: 0,
      });
      expect(await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'c1' })).toMatchObject({
        status: 'failed',
        error: { kind: 'CommandAlreadySettled', commandId: 'c1', settledAs: 'delivered' },
      });
      expect(await backlog.cancel(actor, { tenantId: 'acme', commandId: 'c2', reason: 'again' })).toMatchObject({
        status: 'failed',
        error: { kind: 'CommandAlreadySettled', settledAs: 'failed' },
      });
      expect(await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'never' })).toMatchObject({
        status: 'failed',
        error: { kind: 'UnknownCommand', commandId: 'never' },
      });
      // Three slots are free again, not more: the refused settlements decremented nothing.
      for (const id of ['d1', 'd2', 'd3']) expect(await enqueue(id)).toMatchObject({ status: 'accepted' });
      expect(await enqueue('d4')).toMatchObject({ status: 'rejected', undelivered: 3 });
      const recorded = await store.readStream(commandsStream('acme'));
      expect(recorded.slice(3, 6).map((event) => [event.type, event.data])).toEqual([
        ['CommandDelivered', { tenantId: 'acme', commandId: 'c1', undelivered: 2 }],
        ['CommandFailed', { tenantId: 'acme', commandId: 'c2', undelivered: 1, error: 'device offline' }],
        ['CommandCancelled', { tenantId: 'acme', commandId: 'c3', undelivered: 0 }],
      ]);
      expect(recorded[5]!.metadata.reason).toBe('operator aborted');
    });

    it('concurrent deliveries of one command free one slot', async () => {
      for (const id of ['c1', 'c2', 'c3']) await enqueue(id);
      const outcomes = await Promise.all(
        Array.from({ length: 6 }, () => backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'c1' })),
      );
      expect(outcomes.filter((outcome) => outcome.status === 'settled')).toHaveLength(1);
      expect(await enqueue('c4')).toMatchObject({ status: 'accepted', undelivered: 3 });
      expect(await enqueue('c5')).toMatchObject({ status: 'rejected' });
    });

    it('expires commands queued longer than the TTL, and only those', async () => {
      await enqueue('old1');
      await enqueue('old2');
      clock = new Date(clock.getTime() + TTL_MS / 2);
      await enqueue('young');
      clock = new Date(clock.getTime() + TTL_MS / 2 + 1);
      expect(await backlog.expireOlderThanTtl()).toEqual({ expired: 2 });
      expect(await backlog.expireOlderThanTtl()).toEqual({ expired: 0 });
      expect(await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'old1' })).toMatchObject({
        error: { kind: 'CommandAlreadySettled', settledAs: 'expired' },
      });
      const expired = (await store.readStream(commandsStream('acme'))).filter((event) => event.type === 'CommandExpired');
      expect(expired.map((event) => event.data)).toEqual([
        expect.objectContaining({ commandId: 'old1', undelivered: 2, ttlMs: TTL_MS }),
        expect.objectContaining({ commandId: 'old2', undelivered: 1, ttlMs: TTL_MS }),
      ]);
      expect(await enqueue('c2')).toMatchObject({ status: 'accepted', undelivered: 2 });
    });

    it('keeps the queue when the ceiling drops below it, and refuses until the backlog is below', async () => {
      for (const id of ['c1', 'c2', 'c3']) await enqueue(id);
      await setCeiling(testDb.db, 'acme', 1);
      expect(await enqueue('c4')).toMatchObject({ status: 'rejected', reason: 'CEILING_REACHED', undelivered: 3, ceiling: 1 });
      await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'c1' });
      await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'c2' });
      expect(await enqueue('c4')).toMatchObject({ status: 'rejected', undelivered: 1, ceiling: 1 });
      await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'c3' });
      expect(await enqueue('c4')).toEqual({ status: 'accepted', commandId: 'c4', undelivered: 1, ceiling: 1 });
    });

    it('derives retryAfterSeconds from the recent delivery pace', async () => {
      for (const id of ['c1', 'c2', 'c3']) await enqueue(id);
      await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'c1' });
      clock = new Date(clock.getTime() + 8_000);
      await backlog.markDelivered(actor, { tenantId: 'acme', commandId: 'c2' });
      await enqueue('c4');
      await enqueue('c5');
      expect(await enqueue('c6')).toMatchObject({ status: 'rejected', retryAfterSeconds: 8 });
      clock = new Date(clock.getTime() + 20_000);
      expect(await enqueue('c6')).toMatchObject({ status: 'rejected', retryAfterSeconds: 20 });
    });

    it('refuses bad input with a typed error and appends nothing', async () => {
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const cases: Array<[Parameters<CommandBacklog['enqueue']>[1], string]> = [
        [{ tenantId: 'acme', commandId: '', deviceId: 'd', payload: {} }, 'commandId'],
        [{ tenantId: 'acme', commandId: 'x'.repeat(257), deviceId: 'd', payload: {} }, 'commandId'],
        [{ tenantId: 'acme', commandId: 'c', deviceId: '  ', payload: {} }, 'deviceId'],
        [{ tenantId: 'acme', commandId: 'c', deviceId: 'd'.repeat(257), payload: {} }, 'deviceId'],
        [{ tenantId: '', commandId: 'c', deviceId: 'd', payload: {} }, 'tenantId'],
        [{ tenantId: 'acme', commandId: 'c', deviceId: 'd', payload: { blob: 'x'.repeat(MAX_PAYLOAD_BYTES) } }, 'payload'],
        [{ tenantId: 'acme', commandId: 'c', deviceId: 'd', payload: undefined }, 'payload'],
        [{ tenantId: 'acme', commandId: 'c', deviceId: 'd', payload: { at: Number.NaN } }, 'payload'],
        [{ tenantId: 'acme', commandId: 'c', deviceId: 'd', payload: cyclic }, 'payload'],
        [{ tenantId: 'acme', commandId: 'c', deviceId: 'd', payload: { when: new Date() } }, 'payload'],
      ];
      for (const [input, field] of cases) {
        expect(await backlog.enqueue(actor, input)).toMatchObject({ status: 'invalid', field });
      }
      expect(await backlog.markDelivered(actor, { tenantId: 'acme', commandId: '' })).toMatchObject({ status: 'invalid', field: 'commandId' });
      expect(await backlog.cancel(actor, { tenantId: 'acme', commandId: 'c', reason: ' ' })).toMatchObject({ status: 'invalid', field: 'reason' });
      const { rows } = await testDb.db.query<{ n: bigint }>('SELECT count(*) AS n FROM gl_events');
      expect(rows[0]!.n).toBe(0n);
      // 256 characters and a payload of exactly 64 KiB are still fine.
      const blob = 'x'.repeat(MAX_PAYLOAD_BYTES - JSON.stringify({ b: '' }).length);
      expect(await backlog.enqueue(actor, { tenantId: 'acme', commandId: 'c'.repeat(256), deviceId: 'd'.repeat(256), payload: { b: blob } })).toMatchObject({
        status: 'accepted',
      });
    });
  });
}
