// The stream-revision backlog keeps only its most recently used tenants in memory and restores the others
// from a snapshot of their folded commands stream, folding only the events after it. A snapshot is a cache:
// one the stream does not hold is discarded, and one that cannot be stored or read costs only folding.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import type { EventStore, ReadStreamOptions } from '../../../src/ledger/eventStore.ts';
import { commandsStream } from '../../../src/ledger/catalog/commands.ts';
import { createStreamCommandBacklog, type StreamBacklogOptions } from '../../../src/command-backlog/stream/createStreamCommandBacklog.ts';
import { describeOnEachStorage, type TestDb } from '../../support/databases.ts';
import { setCeiling, tableCeilings } from './ceilingTable.ts';
import { openCommandsDatabase, OPEN_TIMEOUT_MS } from './commandsDatabase.ts';

const actor = { id: 'svc:command-delivery', role: 'SERVICE' };

describeOnEachStorage('command state snapshots on $name', (target) => {
  let testDb: TestDb;
  let store: EventStore;
  const run = randomBytes(4).toString('hex');
  let tenants = 0;

  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ testDb, store, close } = await openCommandsDatabase(target));
  }, OPEN_TIMEOUT_MS);
  afterAll(() => close());

  async function freshTenant(ceiling: number): Promise<string> {
    const tenantId = `snap-${run}-${++tenants}`;
    await setCeiling(testDb.db, tenantId, ceiling);
    return tenantId;
  }

  /** The ledger, recording where each read of a commands stream started. */
  function recordingReads() {
    const reads: Array<{ stream: string; from: ReadStreamOptions['fromRevision']; maxCount?: number }> = [];
    const recording: EventStore = Object.create(store) as EventStore;
    recording.readStream = (stream, options) => {
      reads.push({ stream, from: options?.fromRevision ?? 'start', ...(options?.maxCount === undefined ? {} : { maxCount: options.maxCount }) });
      return store.readStream(stream, options);
    };
    return { store: recording, readsOf: (tenantId: string) => reads.filter((each) => each.stream === commandsStream(tenantId)) };
  }

  const backlogOn = (options: Partial<StreamBacklogOptions> = {}) =>
    createStreamCommandBacklog({ store, db: testDb.db, ceilings: tableCeilings, commandTtlMs: 60_000, now: () => new Date(), ...options });
  const enqueueOn = (backlog: ReturnType<typeof backlogOn>, tenantId: string, commandId: string) =>
    backlog.enqueue(actor, { tenantId, commandId, deviceId: 'dev-1', payload: { op: 'open' } });
  const snapshotOf = async (tenantId: string) =>
    (await testDb.db.query<{ revision: bigint; last_event_id: string }>('SELECT revision, last_event_id FROM gl_command_state_snapshots WHERE tenant_id = $1', [tenantId])).rows[0];

  it('restores a tenant in a new process from its snapshot and folds only the events after it', async () => {
    const tenantId = await freshTenant(5);
    const first = backlogOn({ snapshotEveryEvents: 4 });
    for (const id of ['c1', 'c2', 'c3', 'c4', 'c5']) expect(await enqueueOn(first, tenantId, id)).toMatchObject({ status: 'accepted' });
    expect(await enqueueOn(first, tenantId, 'c6')).toMatchObject({ status: 'rejected', reason: 'CEILING_REACHED' });
    expect(await first.markDelivered(actor, { tenantId, commandId: 'c1' })).toMatchObject({ status: 'settled', undelivered: 4 });
    // Revisions 0..3 were folded before the fifth enqueue was decided: the snapshot stands at revision 3.
    const snapshot = await snapshotOf(tenantId);
    expect(snapshot?.revision).toBe(3n);
    const events = await store.readStream(commandsStream(tenantId));
    expect(snapshot?.last_event_id).toBe(events[3]!.id);

    const reads = recordingReads();
    const second = backlogOn({ store: reads.store });
    // Answers that need the restored state: a repeat gets its first answer, the ceiling and settlements hold.
    expect(await enqueueOn(second, tenantId, 'c2')).toEqual({ status: 'accepted', commandId: 'c2', undelivered: 2, ceiling: 5 });
    expect(await enqueueOn(second, tenantId, 'c7')).toMatchObject({ status: 'accepted', undelivered: 5 });
    expect(await enqueueOn(second, tenantId, 'c8')).toMatchObject({ status: 'rejected', undelivered: 5 });
    expect(await second.markDelivered(actor, { tenantId, commandId: 'c1' })).toMatchObject({ error: { kind: 'CommandAlreadySettled', settledAs: 'delivered' } });
    expect(reads.readsOf(tenantId)).toEqual([
      { stream: commandsStream(tenantId), from: 3n, maxCount: 1 },
      { stream: commandsStream(tenantId), from: 4n },
      // A decision folds its own append at the next one's catch-up.
      { stream: commandsStream(tenantId), from: 7n },
      { stream: commandsStream(tenantId), from: 7n },
      { stream: commandsStream(tenantId), from: 8n },
    ]);
  });

  it('discards a snapshot whose event the stream does not hold, and folds the stream from the start', async () => {
    const tenantId = await freshTenant(3);
    const first = backlogOn({ snapshotEveryEvents: 1 });
    await enqueueOn(first, tenantId, 'c1');
    await enqueueOn(first, tenantId, 'c2');
    expect(await snapshotOf(tenantId)).toBeDefined();
    // As if the ledger had been replaced under the database: the snapshot names an event the stream lacks.
    await testDb.db.query("UPDATE gl_command_state_snapshots SET revision = 40, last_event_id = 'gone' WHERE tenant_id = $1", [tenantId]);

    const reads = recordingReads();
    const second = backlogOn({ store: reads.store, snapshotEveryEvents: 1 });
    expect(await enqueueOn(second, tenantId, 'c1')).toEqual({ status: 'accepted', commandId: 'c1', undelivered: 1, ceiling: 3 });
    expect(await enqueueOn(second, tenantId, 'c3')).toMatchObject({ status: 'accepted', undelivered: 3 });
    expect(await enqueueOn(second, tenantId, 'c4')).toMatchObject({ status: 'rejected', undelivered: 3 });
    expect(reads.readsOf(tenantId).slice(0, 2)).toEqual([
      { stream: commandsStream(tenantId), from: 40n, maxCount: 1 },
      { stream: commandsStream(tenantId), from: 'start' },
    ]);
    // The stale snapshot is gone; the one taken since stands on a real event of the stream.
    const replaced = await snapshotOf(tenantId);
    const events = await store.readStream(commandsStream(tenantId));
    expect(replaced?.last_event_id).toBe(events[Number(replaced!.revision)]!.id);
  });

  it('decides as usual when snapshots can be neither stored nor read', async () => {
    const tenantId = await freshTenant(2);
    const failing: Db = Object.create(testDb.db) as Db;
    failing.query = ((sql: string, params?: unknown[]) =>
      sql.includes('gl_command_state_snapshots') ? Promise.reject(new Error('snapshots unavailable')) : testDb.db.query(sql, params)) as Db['query'];
    // Nothing held between decisions: every decision tries the snapshot first.
    const backlog = backlogOn({ db: failing, maxTenantsInMemory: 0, snapshotEveryEvents: 1 });
    expect(await enqueueOn(backlog, tenantId, 'c1')).toMatchObject({ status: 'accepted', undelivered: 1 });
    expect(await enqueueOn(backlog, tenantId, 'c2')).toMatchObject({ status: 'accepted', undelivered: 2 });
    expect(await enqueueOn(backlog, tenantId, 'c1')).toEqual({ status: 'accepted', commandId: 'c1', undelivered: 1, ceiling: 2 });
    expect(await enqueueOn(backlog, tenantId, 'c3')).toMatchObject({ status: 'rejected', undelivered: 2 });
    expect(await snapshotOf(tenantId)).toBeUndefined();
  });

  it('holds at most maxTenantsInMemory tenants; one it let go is folded again on its next decision', async () => {
    const [a, b, c] = [await freshTenant(5), await freshTenant(5), await freshTenant(5)];
    const reads = recordingReads();
    const backlog = backlogOn({ store: reads.store, maxTenantsInMemory: 2, snapshotEveryEvents: 1_000 });
    // Two decisions each: the second folds the first's event, so a held tenant then reads on from revision 1.
    for (const tenantId of [a, b]) for (const id of ['c1', 'c2']) await enqueueOn(backlog, tenantId, id);
    await enqueueOn(backlog, c, 'c1');
    await enqueueOn(backlog, c, 'c2');
    // a was the least recently used when c came in, so it was let go; c is still held.
    expect(await enqueueOn(backlog, a, 'c3')).toMatchObject({ status: 'accepted', undelivered: 3 });
    expect(await enqueueOn(backlog, c, 'c3')).toMatchObject({ status: 'accepted', undelivered: 3 });
    expect(reads.readsOf(a).map((each) => each.from)).toEqual(['start', 'start', 'start']);
    expect(reads.readsOf(c).map((each) => each.from)).toEqual(['start', 'start', 1n]);
    // The expiry pass still knows every tenant it enqueued for, held or not.
    expect(await backlog.expireOlderThanTtl()).toEqual({ expired: 0 });
    expect(reads.readsOf(b).map((each) => each.from)).toEqual(['start', 'start', 'start']);
  });
});
