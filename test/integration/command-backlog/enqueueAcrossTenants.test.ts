// The database path decides the concurrent enqueues of several tenants in one transaction (group commit
// across tenants). Each tenant is still held to its own ceiling, first come first served; a fault in one
// tenant's part fails only that tenant's enqueues.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Db, Queryable } from '../../../src/db/db.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { commandsStream } from '../../../src/ledger/catalog/commands.ts';
import { createDatabaseCommandBacklog } from '../../../src/command-backlog/postgres/createDatabaseCommandBacklog.ts';
import type { CeilingSource, EnqueueOutcome, TenantCeiling } from '../../../src/command-backlog/types.ts';
import { describeOnEachStorage, type TestDb } from '../../support/databases.ts';
import { setCeiling, tableCeilings, tableCeilingsOfMany } from './ceilingTable.ts';
import { openCommandsDatabase, OPEN_TIMEOUT_MS } from './commandsDatabase.ts';

const actor = { id: 'svc:command-delivery' };

/** A Db that counts the transactions it runs. */
function countingTransactions(db: Db): { db: Db; transactions: () => number } {
  let count = 0;
  const counted: Db = Object.create(db) as Db;
  counted.transaction = (work) => {
    count++;
    return db.transaction(work);
  };
  return { db: counted, transactions: () => count };
}

describeOnEachStorage('command enqueues across tenants on $name', (target) => {
  let testDb: TestDb;
  let store: EventStore;
  let run = 0;

  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ testDb, store, close } = await openCommandsDatabase(target));
  }, OPEN_TIMEOUT_MS);
  afterAll(() => close());

  /** Every stream event in order: the running count never passes the ceiling and each event that changes it carries it. */
  async function expectLedgerWithinCeiling(tenantId: string, ceiling: number) {
    let running = 0;
    for (const event of await store.readStream(commandsStream(tenantId))) {
      if (event.type === 'CommandEnqueued') running++;
      else if (event.type !== 'CommandRejected') running--;
      expect(running).toBeLessThanOrEqual(ceiling);
      // Enqueued and settled (expired) events alike carry the backlog right after them, in stream order.
      if (event.type !== 'CommandRejected') expect((event.data as { undelivered: number }).undelivered).toBe(running);
    }
    return running;
  }

  it.each([
    ['reads all ceilings at once', tableCeilingsOfMany],
    ['reads the ceilings one by one', tableCeilings],
  ])('holds each tenant to its own ceiling when they enqueue at once (%s)', async (_, ceilings) => {
    const prefix = `spread-${++run}`;
    const tenants = Array.from({ length: 12 }, (_, i) => ({ tenantId: `${prefix}-${i}`, ceiling: i + 1 }));
    for (const { tenantId, ceiling } of tenants) await setCeiling(testDb.db, tenantId, ceiling);
    const nobody = `${prefix}-nobody`;
    const counted = countingTransactions(testDb.db);
    const backlog = createDatabaseCommandBacklog(counted.db, { ceilings, commandTtlMs: 60_000, now: () => new Date() });

    // Round robin over the tenants, so a batch finds many of them waiting; every id is sent twice.
    const calls: Array<{ tenantId: string; commandId: string }> = [];
    for (let n = 0; n < 36; n++) {
      for (const { tenantId } of [...tenants, { tenantId: nobody }]) calls.push({ tenantId, commandId: `c-${n >> 1}` });
    }
    const outcomes = await Promise.all(calls.map(({ tenantId, commandId }) => backlog.enqueue(actor, { tenantId, commandId, deviceId: 'd', payload: { n: commandId } })));
    // One transaction per tenant at least if tenants were decided apart; fewer means batches were shared.
    expect(counted.transactions()).toBeLessThan(tenants.length);

    const byTenant = new Map<string, EnqueueOutcome[]>();
    calls.forEach(({ tenantId }, i) => byTenant.set(tenantId, [...(byTenant.get(tenantId) ?? []), outcomes[i]!]));
    for (const { tenantId, ceiling } of tenants) {
      const answers = byTenant.get(tenantId)!;
      const accepted = answers.flatMap((answer) => (answer.status === 'accepted' ? [answer] : []));
      const firstAcceptances = new Map(accepted.map((answer) => [answer.commandId, answer]));
      expect(firstAcceptances.size).toBe(ceiling);
      // Both sends of an accepted id got the same answer; the counts handed out are 1..ceiling.
      for (const answer of accepted) expect(answer).toEqual(firstAcceptances.get(answer.commandId));
      expect([...firstAcceptances.values()].map((answer) => answer.undelivered).sort((a, b) => a - b)).toEqual(Array.from({ length: ceiling }, (_, i) => i + 1));
      // First come first served: the first `ceiling` ids in arrival order are the ones accepted.
      expect([...firstAcceptances.keys()].sort()).toEqual(Array.from({ length: ceiling }, (_, i) => `c-${i}`).sort());
      const rejected = answers.filter((answer) => answer.status === 'rejected');
      expect(rejected.every((answer) => answer.status === 'rejected' && answer.reason === 'CEILING_REACHED' && answer.ceiling === ceiling)).toBe(true);
      expect(await expectLedgerWithinCeiling(tenantId, ceiling)).toBe(ceiling);
      const types = (await store.readStream(commandsStream(tenantId))).map((event) => event.type);
      expect(types.filter((type) => type === 'CommandEnqueued')).toHaveLength(ceiling);
      expect(types.filter((type) => type === 'CommandRejected')).toHaveLength(rejected.length);
      const guard = await testDb.db.query<{ undelivered: number }>('SELECT undelivered FROM gl_command_backlog_guard WHERE tenant_id = $1', [tenantId]);
      expect(guard.rows[0]!.undelivered).toBe(ceiling);
    }
    expect(byTenant.get(nobody)!.every((answer) => answer.status === 'rejected' && answer.reason === 'UNKNOWN_TENANT')).toBe(true);
    expect(await store.readStream(commandsStream(nobody))).toEqual([]);
    const nobodyGuard = await testDb.db.query('SELECT 1 FROM gl_command_backlog_guard WHERE tenant_id = $1', [nobody]);
    expect(nobodyGuard.rowCount).toBe(0);
  });

  it.each([
    ['in the batch read', true],
    ['in a one-tenant read', false],
  ])('fails only the tenant whose part fails, and decides the others (%s)', async (_, withMany) => {
    const prefix = `fault-${++run}`;
    const tenants = Array.from({ length: 6 }, (_, i) => `${prefix}-${i}`);
    const broken = tenants[4]!;
    for (const tenantId of tenants) await setCeiling(testDb.db, tenantId, 2);
    let batchReadsWithBroken = 0;
    const one = async (q: Queryable, tenantId: string): Promise<TenantCeiling | null> => {
      if (tenantId === broken) throw new Error(`no ceiling for ${tenantId}`);
      return tableCeilings(q, tenantId);
    };
    const ceilings: CeilingSource = withMany
      ? Object.assign(one, {
          many: async (q: Queryable, tenantIds: readonly string[]) => {
            if (tenantIds.includes(broken)) {
              batchReadsWithBroken++;
              throw new Error(`no ceiling for ${broken}`);
            }
            return tableCeilingsOfMany.many!(q, tenantIds);
          },
        })
      : one;
    const counted = countingTransactions(testDb.db);
    const backlog = createDatabaseCommandBacklog(counted.db, { ceilings, commandTtlMs: 60_000, now: () => new Date() });
    const calls = Array.from({ length: 3 }, (_, n) => tenants.map((tenantId) => ({ tenantId, commandId: `c-${n}` }))).flat();
    const settled = await Promise.allSettled(calls.map(({ tenantId, commandId }) => backlog.enqueue(actor, { tenantId, commandId, deviceId: 'd', payload: {} })));
    if (withMany) expect(batchReadsWithBroken).toBeGreaterThan(0);
    calls.forEach(({ tenantId, commandId }, i) => {
      const answer = settled[i]!;
      if (tenantId === broken) {
        expect(answer).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: `no ceiling for ${broken}` }) });
      } else {
        expect(answer.status).toBe('fulfilled');
        const outcome = (answer as PromiseFulfilledResult<EnqueueOutcome>).value;
        expect(outcome).toMatchObject(commandId === 'c-2' ? { status: 'rejected', reason: 'CEILING_REACHED' } : { status: 'accepted' });
      }
    });
    // The failed shared transaction left nothing behind: each other tenant's decisions are recorded once.
    for (const tenantId of tenants) {
      const types = (await store.readStream(commandsStream(tenantId))).map((event) => event.type);
      expect(types).toEqual(tenantId === broken ? [] : ['CommandEnqueued', 'CommandEnqueued', 'CommandRejected']);
      const guard = await testDb.db.query<{ undelivered: number }>('SELECT undelivered FROM gl_command_backlog_guard WHERE tenant_id = $1', [tenantId]);
      expect(guard.rows[0]?.undelivered ?? 0).toBe(tenantId === broken ? 0 : 2);
    }
  });

  it('fails only the enqueue the database refuses, not the others of its tenant in the same batch', async () => {
    const prefix = `poison-${++run}`;
    const tenants = [`${prefix}-a`, `${prefix}-b`];
    for (const tenantId of tenants) await setCeiling(testDb.db, tenantId, 100);
    // A value that passes every input check and still fails inside the shared transaction: a trigger refuses it.
    await testDb.db.exec(`
      CREATE OR REPLACE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.command_id LIKE 'poison%' THEN RAISE EXCEPTION 'refused %', NEW.command_id; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER refuse_poison BEFORE INSERT ON gl_commands FOR EACH ROW EXECUTE FUNCTION refuse_poison();`);
    try {
      const backlog = createDatabaseCommandBacklog(testDb.db, { ceilings: tableCeilingsOfMany, commandTtlMs: 60_000, now: () => new Date() });
      const calls = tenants.flatMap((tenantId) => [
        ...Array.from({ length: 15 }, (_, n) => ({ tenantId, commandId: `c-${n}` })),
        { tenantId, commandId: 'poison' },
        ...Array.from({ length: 15 }, (_, n) => ({ tenantId, commandId: `d-${n}` })),
      ]);
      const settled = await Promise.allSettled(calls.map(({ tenantId, commandId }) => backlog.enqueue(actor, { tenantId, commandId, deviceId: 'd', payload: {} })));
      calls.forEach(({ commandId }, i) => {
        if (commandId === 'poison') expect(settled[i]).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ message: expect.stringContaining('refused poison') }) });
        else expect(settled[i]).toMatchObject({ status: 'fulfilled', value: { status: 'accepted' } });
      });
      for (const tenantId of tenants) {
        const types = (await store.readStream(commandsStream(tenantId))).map((event) => event.type);
        expect(types).toEqual(Array(30).fill('CommandEnqueued'));
        await expectLedgerWithinCeiling(tenantId, 100);
      }
    } finally {
      await testDb.db.exec('DROP TRIGGER refuse_poison ON gl_commands; DROP FUNCTION refuse_poison()');
    }
  });

  it('expires commands of several tenants while enqueues of those tenants are decided together', async () => {
    const prefix = `expiry-${++run}`;
    const tenants = Array.from({ length: 8 }, (_, i) => `${prefix}-${i}`);
    for (const tenantId of tenants) await setCeiling(testDb.db, tenantId, 1_000);
    let clock = new Date('2020-01-01T00:00:00Z');
    const backlog = createDatabaseCommandBacklog(testDb.db, { ceilings: tableCeilingsOfMany, commandTtlMs: 60_000, now: () => clock });
    const enqueueAll = (round: string) =>
      Promise.all(tenants.flatMap((tenantId) => Array.from({ length: 5 }, (_, n) => backlog.enqueue(actor, { tenantId, commandId: `${round}-${n}`, deviceId: 'd', payload: {} }))));
    await enqueueAll('old');
    clock = new Date(clock.getTime() + 120_000);
    const [fresh, expiry] = await Promise.all([enqueueAll('new'), backlog.expireOlderThanTtl()]);
    expect(fresh.every((outcome) => outcome.status === 'accepted')).toBe(true);
    expect(expiry.expired).toBe(40);
    for (const tenantId of tenants) {
      expect(await expectLedgerWithinCeiling(tenantId, 1_000)).toBe(5);
      const expired = (await store.readStream(commandsStream(tenantId))).filter((event) => event.type === 'CommandExpired');
      expect(expired.map((event) => (event.data as { commandId: string }).commandId).sort()).toEqual(['old-0', 'old-1', 'old-2', 'old-3', 'old-4']);
      const guard = await testDb.db.query<{ undelivered: number }>('SELECT undelivered FROM gl_command_backlog_guard WHERE tenant_id = $1', [tenantId]);
      expect(guard.rows[0]!.undelivered).toBe(5);
    }
  });

  it('expires in ledger appends each under the size cap, every tenant’s events in order', async () => {
    const prefix = `expiry-cap-${++run}`;
    const tenants = Array.from({ length: 3 }, (_, i) => `${prefix}-${i}`);
    for (const tenantId of tenants) await setCeiling(testDb.db, tenantId, 1_000);
    let clock = new Date('2020-01-01T00:00:00Z');
    // Counts the append statements of the expiry's transactions.
    let appendStatements = 0;
    const counted: Db = Object.create(testDb.db) as Db;
    counted.transaction = (work) =>
      testDb.db.transaction((tx) =>
        work({
          ...tx,
          query: (sql, params) => {
            if (sql.includes('INSERT INTO gl_events')) appendStatements++;
            return tx.query(sql, params);
          },
        }),
      );
    const backlog = createDatabaseCommandBacklog(counted, { ceilings: tableCeilingsOfMany, commandTtlMs: 60_000, now: () => clock, maxAppendBytes: 2_000 });
    for (const tenantId of tenants) {
      for (let n = 0; n < 10; n++) {
        clock = new Date(clock.getTime() + 1);
        await backlog.enqueue(actor, { tenantId, commandId: `c${n}`, deviceId: 'd', payload: {} });
      }
    }
    clock = new Date(clock.getTime() + 120_000);
    appendStatements = 0;
    expect(await backlog.expireOlderThanTtl()).toEqual({ expired: 30 });
    // 30 events of ~300 bytes under a 2,000-byte cap: several appends, all in the pass's one transaction.
    expect(appendStatements).toBeGreaterThanOrEqual(5);
    for (const tenantId of tenants) {
      const expired = (await store.readStream(commandsStream(tenantId))).filter((event) => event.type === 'CommandExpired');
      expect(expired.map((event) => (event.data as { commandId: string }).commandId)).toEqual(Array.from({ length: 10 }, (_, n) => `c${n}`));
      expect(expired.map((event) => (event.data as { undelivered: number }).undelivered)).toEqual(Array.from({ length: 10 }, (_, n) => 9 - n));
      const guard = await testDb.db.query<{ undelivered: number }>('SELECT undelivered FROM gl_command_backlog_guard WHERE tenant_id = $1', [tenantId]);
      expect(guard.rows[0]!.undelivered).toBe(0);
    }
  });
});
