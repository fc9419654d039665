// The required behaviour of a CommandBacklog, run against each implementation (the database-transaction
// path and the stream-revision path) on each storage target.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { commandsStream } from '../../../src/ledger/catalog/commands.ts';
import type { CeilingSource, CommandBacklog } from '../../../src/command-backlog/types.ts';
import { DEFAULT_RETRY_AFTER_SECONDS } from '../../../src/command-backlog/retryAfter.ts';
import { MAX_PAYLOAD_BYTES } from '../../../src/command-backlog/validateCommand.ts';
import { MAX_JSON_DEPTH } from '../../../src/db/storableValues.ts';
import { startCommandExpiry } from '../../../src/command-backlog/startCommandExpiry.ts';
import { storageTargets, type StorageTarget, type TestDb } from '../../support/databases.ts';
import { waitFor } from '../../support/waitFor.ts';
import { setCeiling, tableCeilings } from './ceilingTable.ts';
import { openCommandsDatabase, OPEN_TIMEOUT_MS } from './commandsDatabase.ts';


export type BacklogFactory = (settings: {
  db: Db;
  store: EventStore;
  ceilings: CeilingSource;
  commandTtlMs: number;
  now: () => Date;
}) => CommandBacklog;

const actor = { id: 'svc:command-delivery', role: 'SERVICE' };

/** A JSON value `levels` deep: that many objects inside each other. */
function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { v: value };
  return value;
}
const TTL_MS = 60_000;

export interface SuiteOptions {
  /** The ledger; by default the PostgreSQL adapter on the test database. */
  openStore?: (db: Db) => EventStore;
  targets?: StorageTarget[];
}

export function describeCommandBacklog(name: string, makeBacklog: BacklogFactory, { openStore = createPostgresEventStore, targets = storageTargets }: SuiteOptions = {}) {
  describe.each(targets)(`${name} on $name`, (target) => {
    let testDb: TestDb;
    let store: EventStore;
    let backlog: CommandBacklog;
    let clock: Date;
    let tenant: string;
    let tenants = 0;
    // Unique per run: a ledger outside the test database (EventStoreDB) keeps earlier runs' streams.
    const run = randomBytes(4).toString('hex');

    let close: () => Promise<void>;
    // One database per target (opening one is the slow part); each test works on a tenant of its own.
    beforeAll(async () => {
      ({ testDb, store, close } = await openCommandsDatabase(target, openStore));
    }, OPEN_TIMEOUT_MS);
    afterAll(() => close());

    beforeEach(async () => {
      tenant = `tenant-${run}-${++tenants}`;
      await setCeiling(testDb.db, tenant, 3);
      clock = new Date('2026-01-01T00:00:00Z');
      backlog = makeBacklog({ db: testDb.db, store, ceilings: tableCeilings, commandTtlMs: TTL_MS, now: () => clock });
    });

    const enqueue = (commandId: string, tenantId = tenant, payload: unknown = { op: 'open' }) =>
      backlog.enqueue(actor, { tenantId, commandId, deviceId: 'dev-1', payload });
    const events = async (tenantId = tenant) => (await store.readStream(commandsStream(tenantId))).map((event) => event.type);
    const ref = (commandId: string) => ({ tenantId: tenant, commandId });

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
      const [first] = await store.readStream(commandsStream(tenant));
      expect(first!.data).toMatchObject({ tenantId: tenant, commandId: 'c1', deviceId: 'dev-1', payload: { op: 'open' }, ceilingSource: 'TIER' });
      expect(first!.metadata).toMatchObject({ actor: actor.id, actorRole: 'SERVICE', occurredAt: clock.toISOString() });
    });

    it('answers a repeated commandId with its first acceptance and counts it once', async () => {
      await enqueue('c1');
      await enqueue('c2');
      expect(await enqueue('c1')).toEqual({ status: 'accepted', commandId: 'c1', undelivered: 1, ceiling: 3 });
      expect(await enqueue('c3')).toMatchObject({ status: 'accepted', undelivered: 3 });
      expect(await events()).toEqual(['CommandEnqueued', 'CommandEnqueued', 'CommandEnqueued']);
      await backlog.markDelivered(actor, ref('c1'));
      expect(await enqueue('c1')).toMatchObject({ status: 'settled-before', commandId: 'c1', settledAs: 'delivered' });
      expect(await enqueue('c4')).toMatchObject({ status: 'accepted', undelivered: 3 });
    });

    it('decides a burst of concurrent enqueues, repeats included, as if one by one', async () => {
      const ids = ['c1', 'c2', 'c1', 'c3', 'c4', 'c4', 'c5'];
      const outcomes = await Promise.all(ids.map((id) => enqueue(id)));
      // In some order: exactly three distinct commands take the three slots, a repeat gets its first's answer.
      expect(outcomes[2]).toEqual(outcomes[0]);
      expect(outcomes[5]).toEqual(outcomes[4]);
      const acceptedIds = new Set(outcomes.flatMap((outcome) => (outcome.status === 'accepted' ? [outcome.commandId] : [])));
      expect(acceptedIds.size).toBe(3);
      const firstAnswers = outcomes.filter((_, i) => ids.indexOf(ids[i]!) === i);
      expect(firstAnswers.flatMap((outcome) => (outcome.status === 'accepted' ? [outcome.undelivered] : [])).sort()).toEqual([1, 2, 3]);
      const rejections = outcomes.filter((outcome) => outcome.status === 'rejected');
      expect(rejections.every((outcome) => outcome.status === 'rejected' && outcome.reason === 'CEILING_REACHED' && outcome.undelivered === 3)).toBe(true);
      expect((await events()).sort()).toEqual([...Array(3).fill('CommandEnqueued'), ...Array(rejections.length).fill('CommandRejected')]);
    });

    it('answers a reused commandId with other content CommandIdConflict, and the same content as before', async () => {
      await setCeiling(testDb.db, tenant, 100);
      const send = (commandId: string, deviceId: string, payload: unknown) => backlog.enqueue(actor, { tenantId: tenant, commandId, deviceId, payload });
      expect(await send('c1', 'dev-1', { a: 1, b: [1, 2] })).toEqual({ status: 'accepted', commandId: 'c1', undelivered: 1, ceiling: 100 });
      // The same content, keys in another order (as jsonb would store it), is the same command.
      expect(await send('c1', 'dev-1', { b: [1, 2], a: 1 })).toEqual({ status: 'accepted', commandId: 'c1', undelivered: 1, ceiling: 100 });
      expect(await send('c1', 'dev-2', { a: 1, b: [1, 2] })).toMatchObject({ status: 'conflict', commandId: 'c1', message: expect.stringContaining('c1') });
      expect(await send('c1', 'dev-1', { a: 1, b: [2, 1] })).toMatchObject({ status: 'conflict', commandId: 'c1' });
      // Concurrently: one content wins, every other content conflicts, nothing else is recorded.
      const racing = await Promise.all(Array.from({ length: 20 }, (_, i) => send('c2', `dev-${i}`, { i })));
      expect(racing.filter((outcome) => outcome.status === 'accepted')).toHaveLength(1);
      expect(racing.filter((outcome) => outcome.status === 'conflict')).toHaveLength(19);
      expect(await events()).toEqual(['CommandEnqueued', 'CommandEnqueued']);
    });

    it('answers a settled command\'s id with how it left, not a fresh acceptance', async () => {
      await enqueue('c1');
      await enqueue('c2');
      expect(await backlog.markDelivered(actor, ref('c1'))).toMatchObject({ status: 'settled' });
      expect(await backlog.cancel(actor, { ...ref('c2'), reason: 'superseded' })).toMatchObject({ status: 'settled' });
      expect(await enqueue('c1')).toEqual({ status: 'settled-before', commandId: 'c1', settledAs: 'delivered', message: expect.any(String) });
      expect(await enqueue('c2')).toMatchObject({ status: 'settled-before', settledAs: 'cancelled' });
      // Other content under a settled id is still a conflict.
      expect(await enqueue('c1', tenant, { op: 'close' })).toMatchObject({ status: 'conflict' });
      expect(await events()).toEqual(['CommandEnqueued', 'CommandEnqueued', 'CommandDelivered', 'CommandCancelled']);
    });

    it('lets a refused commandId be enqueued again once there is room', async () => {
      for (const id of ['c1', 'c2', 'c3']) await enqueue(id);
      expect(await enqueue('c4')).toMatchObject({ status: 'rejected', reason: 'CEILING_REACHED' });
      expect(await backlog.markDelivered(actor, ref('c2'))).toEqual({ status: 'settled', commandId: 'c2', undelivered: 2 });
      expect(await enqueue('c4')).toEqual({ status: 'accepted', commandId: 'c4', undelivered: 3, ceiling: 3 });
    });

    it('refuses an unknown tenant, not retryably, and records nothing (no stream for a made-up name)', async () => {
      const nobody = `nobody-${tenant}`;
      expect(await enqueue('c1', nobody)).toEqual({
        status: 'rejected',
        commandId: 'c1',
        reason: 'UNKNOWN_TENANT',
        retryable: false,
        retryAfterSeconds: null,
        undelivered: 0,
        ceiling: null,
      });
      expect(await events(nobody)).toEqual([]);
    });

    it('takes a command out of the backlog once, whichever way it leaves', async () => {
      for (const id of ['c1', 'c2', 'c3']) await enqueue(id);
      expect(await backlog.markDelivered(actor, ref('c1'))).toEqual({ status: 'settled', commandId: 'c1', undelivered: 2 });
      expect(await backlog.markFailed(actor, { tenantId: tenant, commandId: 'c2', error: 'device offline' })).toEqual({
        status: 'settled',
        commandId: 'c2',
        undelivered: 1,
      });
      expect(await backlog.cancel(actor, { tenantId: tenant, commandId: 'c3', reason: 'operator aborted' })).toEqual({
        status: 'settled',
        commandId: 'c3',
        undelivered: 0,
      });
      expect(await backlog.markDelivered(actor, ref('c1'))).toMatchObject({
        status: 'failed',
        error: { kind: 'CommandAlreadySettled', commandId: 'c1', settledAs: 'delivered' },
      });
      expect(await backlog.cancel(actor, { tenantId: tenant, commandId: 'c2', reason: 'again' })).toMatchObject({
        status: 'failed',
        error: { kind: 'CommandAlreadySettled', settledAs: 'failed' },
      });
      expect(await backlog.markDelivered(actor, ref('never'))).toMatchObject({
        status: 'failed',
        error: { kind: 'UnknownCommand', commandId: 'never' },
      });
      // Three slots are free again, not more: the refused settlements decremented nothing.
      for (const id of ['d1', 'd2', 'd3']) expect(await enqueue(id)).toMatchObject({ status: 'accepted' });
      expect(await enqueue('d4')).toMatchObject({ status: 'rejected', undelivered: 3 });
      const recorded = await store.readStream(commandsStream(tenant));
      expect(recorded.slice(3, 6).map((event) => [event.type, event.data])).toEqual([
        ['CommandDelivered', { tenantId: tenant, commandId: 'c1', undelivered: 2 }],
        ['CommandFailed', { tenantId: tenant, commandId: 'c2', undelivered: 1, error: 'device offline' }],
        ['CommandCancelled', { tenantId: tenant, commandId: 'c3', undelivered: 0 }],
      ]);
      expect(recorded[5]!.metadata.reason).toBe('operator aborted');
    });

    it('concurrent deliveries of one command free one slot', async () => {
      for (const id of ['c1', 'c2', 'c3']) await enqueue(id);
      const outcomes = await Promise.all(
        Array.from({ length: 6 }, () => backlog.markDelivered(actor, ref('c1'))),
      );
      expect(outcomes.filter((outcome) => outcome.status === 'settled')).toHaveLength(1);
      expect(await enqueue('c4')).toMatchObject({ status: 'accepted', undelivered: 3 });
      expect(await enqueue('c5')).toMatchObject({ status: 'rejected' });
    });

    it('expires commands queued longer than the TTL, and only those', async () => {
      // Earlier than every other test's clock, so their queued commands stay younger than the cutoff.
      clock = new Date('2025-01-01T00:00:00Z');
      await enqueue('old1');
      await enqueue('old2');
      clock = new Date(clock.getTime() + TTL_MS / 2);
      await enqueue('young');
      clock = new Date(clock.getTime() + TTL_MS / 2 + 1);
      expect(await backlog.expireOlderThanTtl()).toEqual({ expired: 2 });
      expect(await backlog.expireOlderThanTtl()).toEqual({ expired: 0 });
      expect(await backlog.markDelivered(actor, ref('old1'))).toMatchObject({
        error: { kind: 'CommandAlreadySettled', settledAs: 'expired' },
      });
      const expired = (await store.readStream(commandsStream(tenant))).filter((event) => event.type === 'CommandExpired');
      expect(expired.map((event) => event.data)).toEqual([
        expect.objectContaining({ commandId: 'old1', undelivered: 2, ttlMs: TTL_MS }),
        expect.objectContaining({ commandId: 'old2', undelivered: 1, ttlMs: TTL_MS }),
      ]);
      expect(await enqueue('c2')).toMatchObject({ status: 'accepted', undelivered: 2 });
    });

    it('expires on its own when the service runs the periodic pass, and stops cleanly', async () => {
      // Earlier still than the other expiry test, for the same reason.
      clock = new Date('2024-01-01T00:00:00Z');
      await enqueue('stale');
      clock = new Date(clock.getTime() + TTL_MS + 1);
      await enqueue('fresh');
      const reported: number[] = [];
      const errors: unknown[] = [];
      const stop = startCommandExpiry(backlog, { intervalMs: 10, onExpired: (n) => reported.push(n), onError: (e) => errors.push(e) });
      await waitFor(() => reported.length > 0, { description: 'an expiry pass that expired something' });
      await stop();
      expect(reported).toEqual([1]);
      expect(errors).toEqual([]);
      expect(await events()).toEqual(['CommandEnqueued', 'CommandEnqueued', 'CommandExpired']);
      expect(await backlog.markDelivered(actor, ref('fresh'))).toMatchObject({ status: 'settled', undelivered: 0 });
    });

    it('keeps the queue when the ceiling drops below it, and refuses until the backlog is below', async () => {
      for (const id of ['c1', 'c2', 'c3']) await enqueue(id);
      await setCeiling(testDb.db, tenant, 1);
      expect(await enqueue('c4')).toMatchObject({ status: 'rejected', reason: 'CEILING_REACHED', undelivered: 3, ceiling: 1 });
      await backlog.markDelivered(actor, ref('c1'));
      await backlog.markDelivered(actor, ref('c2'));
      expect(await enqueue('c4')).toMatchObject({ status: 'rejected', undelivered: 1, ceiling: 1 });
      await backlog.markDelivered(actor, ref('c3'));
      expect(await enqueue('c4')).toEqual({ status: 'accepted', commandId: 'c4', undelivered: 1, ceiling: 1 });
    });

    it('derives retryAfterSeconds from the recent delivery pace', async () => {
      for (const id of ['c1', 'c2', 'c3']) await enqueue(id);
      await backlog.markDelivered(actor, ref('c1'));
      clock = new Date(clock.getTime() + 8_000);
      await backlog.markDelivered(actor, ref('c2'));
      await enqueue('c4');
      await enqueue('c5');
      expect(await enqueue('c6')).toMatchObject({ status: 'rejected', retryAfterSeconds: 8 });
      clock = new Date(clock.getTime() + 20_000);
      expect(await enqueue('c6')).toMatchObject({ status: 'rejected', retryAfterSeconds: 20 });
    });

    it('refuses bad input with a typed error and appends nothing', async () => {
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      const eventCount = async () => (await testDb.db.query<{ n: bigint }>('SELECT count(*) AS n FROM gl_events')).rows[0]!.n;
      const before = await eventCount();
      const cases: Array<[Parameters<CommandBacklog['enqueue']>[1], string]> = [
        [{ tenantId: tenant, commandId: '', deviceId: 'd', payload: {} }, 'commandId'],
        [{ tenantId: tenant, commandId: 'x'.repeat(257), deviceId: 'd', payload: {} }, 'commandId'],
        [{ tenantId: tenant, commandId: 'c', deviceId: '  ', payload: {} }, 'deviceId'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd'.repeat(257), payload: {} }, 'deviceId'],
        [{ tenantId: '', commandId: 'c', deviceId: 'd', payload: {} }, 'tenantId'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd', payload: { blob: 'x'.repeat(MAX_PAYLOAD_BYTES) } }, 'payload'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd', payload: undefined }, 'payload'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd', payload: { at: Number.NaN } }, 'payload'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd', payload: cyclic }, 'payload'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd', payload: { when: new Date() } }, 'payload'],
        // What PostgreSQL would refuse (or store as something else) is refused before it reaches a batch.
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd', payload: { a: '\ud800' } }, 'payload'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd', payload: { 'a\u0000': 1 } }, 'payload'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd', payload: { a: 'x\u0000y' } }, 'payload'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd', payload: { big: Number('123456789012345678901234567890') } }, 'payload'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd', payload: nested(MAX_JSON_DEPTH + 1) }, 'payload'],
        [{ tenantId: tenant, commandId: 'c\udc00', deviceId: 'd', payload: {} }, 'commandId'],
        [{ tenantId: tenant, commandId: 'c', deviceId: 'd\u0000', payload: {} }, 'deviceId'],
        // Ids that could never be a tenant's are bad input, not unknown tenants.
        [{ tenantId: '../acme', commandId: 'c', deviceId: 'd', payload: {} }, 'tenantId'],
        [{ tenantId: 'acmé😀', commandId: 'c', deviceId: 'd', payload: {} }, 'tenantId'],
      ];
      for (const [input, field] of cases) {
        expect(await backlog.enqueue(actor, input)).toMatchObject({ status: 'invalid', field });
      }
      expect(await backlog.markDelivered(actor, ref(''))).toMatchObject({ status: 'invalid', field: 'commandId' });
      expect(await backlog.cancel(actor, { tenantId: tenant, commandId: 'c', reason: ' ' })).toMatchObject({ status: 'invalid', field: 'reason' });
      expect(await backlog.cancel(actor, { tenantId: tenant, commandId: 'c', reason: 'a\ud800' })).toMatchObject({ status: 'invalid', field: 'reason' });
      expect(await backlog.markFailed(actor, { tenantId: tenant, commandId: 'c', error: 'a\u0000' })).toMatchObject({ status: 'invalid', field: 'error' });
      expect(await eventCount()).toBe(before);
      expect(await events()).toEqual([]);
      // 256 characters and a payload of exactly 64 KiB are still fine.
      const blob = 'x'.repeat(MAX_PAYLOAD_BYTES - JSON.stringify({ b: '' }).length);
      expect(await backlog.enqueue(actor, { tenantId: tenant, commandId: 'c'.repeat(256), deviceId: 'd'.repeat(256), payload: { b: blob } })).toMatchObject({
        status: 'accepted',
      });
      // So are the documented depth, the largest exact integer, and astral characters (proper surrogate pairs).
      expect(await enqueue('deep', tenant, { n: nested(MAX_JSON_DEPTH - 1), max: Number.MAX_SAFE_INTEGER, s: 'acmé😀' })).toMatchObject({ status: 'accepted' });
    });

    it('answers a bad enqueue alone: its neighbours in the same batch are decided', async () => {
      await setCeiling(testDb.db, tenant, 100);
      const bad = [{ a: '\ud800' }, { ['k\u0000']: 1 }, nested(MAX_JSON_DEPTH + 10), { n: Number('123456789012345678901234567890') }];
      const calls = [
        ...Array.from({ length: 30 }, (_, i) => enqueue(`ok-${i}`)),
        ...bad.map((payload, i) => enqueue(`bad-${i}`, tenant, payload)),
      ];
      const outcomes = await Promise.all(calls);
      expect(outcomes.slice(0, 30).every((outcome) => outcome.status === 'accepted')).toBe(true);
      expect(outcomes.slice(30)).toEqual(bad.map(() => expect.objectContaining({ status: 'invalid', field: 'payload' })));
      expect((await events()).filter((type) => type === 'CommandEnqueued')).toHaveLength(30);
    });
  });
}
