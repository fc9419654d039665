import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeOnEachStorage, type StorageTarget, type TestDb } from '../../support/databases.ts';
import { waitFor } from '../../support/waitFor.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { appendInTransaction } from '../../../src/ledger/postgres/appendInTransaction.ts';
import { WrongExpectedRevision, type AppendResult, type EventStore, type RecordedEvent } from '../../../src/ledger/eventStore.ts';
import { eventStoreContract, type ContractExtras } from './eventStore.contract.ts';
import { holdOlderTransaction } from '../../support/olderTransaction.ts';
import { ADMISSIONS_STREAM } from '../../../src/ledger/catalog/admissions.ts';

describeOnEachStorage('PostgreSQL event store on $name', (target) => {
  eventStoreContract(target.name, async () => {
    const { db, connectAgain, dispose } = await target.open();
    const store = createPostgresEventStore(db, { pollIntervalMs: 250 });
    // PGlite is one connection: a transaction held open would block every other query, so the race
    // runs there without held-open writers (its transactions serialise anyway).
    const holder = connectAgain?.({ max: 4 });
    const extra: ContractExtras = {};
    if (holder) {
      extra.appendHeldOpen = (stream, events) =>
        new Promise((resolveWritten, rejectWritten) => {
          let release!: () => void;
          const released = new Promise<void>((resolve) => (release = resolve));
          const committed = holder.transaction(async (tx) => {
            const result = await appendInTransaction(tx, stream, events);
            resolveWritten({ commit: () => (release(), committed) });
            await released;
            return result;
          });
          committed.catch(rejectWritten);
        }) as Promise<{ commit(): Promise<AppendResult> }>;
    }
    return {
      store,
      extra,
      async dispose() {
        await store.close();
        await dispose();
      },
    };
  });

  describe('adapter specifics', () => {
    let opened: TestDb;
    let store: EventStore;
    beforeAll(async () => {
      opened = await (target as StorageTarget).open();
      // A poll interval no test waits for: whatever arrives was woken by NOTIFY or the held-back poll.
      // The waits below are long only because another suite's long transaction on the same server holds
      // every reader back (see VISIBLE_WITHIN_MS in the contract).
      store = createPostgresEventStore(opened.db, { pollIntervalMs: 60_000, heldBackPollMs: 50 });
    });
    afterAll(async () => {
      await store.close();
      await opened.dispose();
    });
    const fresh = () => `specifics-${randomUUID()}`;
    const probe = () => ({ id: randomUUID(), type: 'Probe', data: {} });

    it('reads a page with each event’s data as JSON text when asked (dataAsJson), as parsed otherwise', async () => {
      const stream = fresh();
      const type = `JsonText${randomUUID().slice(0, 8)}`;
      const data = { fields: ['tenantId', 'units'], rows: [['acme', 2.5], ['é', 0]], note: 'quote " and \\ backslash' };
      const { position } = await store.append(stream, [{ type, data }]);
      // Readable once no older transaction on the server holds it back.
      let asJson = await store.readAllPage('start', 10, { types: [type], dataAsJson: true });
      await waitFor(async () => {
        asJson = await store.readAllPage('start', 10, { types: [type], dataAsJson: true });
        return asJson.events.length > 0;
      }, { timeoutMs: 30_000, description: 'the event readable' });
      expect(asJson.events[0]).toMatchObject({ stream, type, position, data: null });
      expect(JSON.parse(asJson.events[0]!.dataJson!)).toEqual(data);
      const parsed = await store.readAllPage('start', 10, { types: [type] });
      expect(parsed.events[0]!.data).toEqual(data);
      expect(parsed.events[0]!.dataJson).toBeUndefined();
    });

    it('numbers racing appends to the summary stream in turn (lock and append in one statement), and stores a batch sent again once', async () => {
      const other = createPostgresEventStore(opened.db);
      const batches = Array.from({ length: 8 }, () => [probe(), probe(), probe()]);
      const results = await Promise.all(batches.map((events, i) => (i % 2 === 0 ? store : other).append(ADMISSIONS_STREAM, events)));
      const stored = await store.readStream(ADMISSIONS_STREAM);
      expect(stored.map((event) => event.revision)).toEqual(stored.map((_, i) => BigInt(i)));
      expect(new Set(stored.map((event) => event.id)).size).toBe(batches.length * 3);
      // Each batch's events are consecutive, and its result names its last one.
      for (const [i, events] of batches.entries()) {
        const places = events.map((event) => stored.findIndex((each) => each.id === event.id));
        expect(places).toEqual([places[0], places[0]! + 1, places[0]! + 2]);
        expect(results[i]!.nextRevision).toBe(BigInt(places[2]!));
      }
      // An append whose outcome a failure hid is sent again at the revision it was first sent at: stored once.
      const again = await other.append(ADMISSIONS_STREAM, batches[3]!, { expectedRevision: results[3]!.nextRevision - 3n });
      expect(again.nextRevision).toBe(results[3]!.nextRevision);
      expect(await store.readStream(ADMISSIONS_STREAM)).toHaveLength(stored.length);
      await expect(other.append(ADMISSIONS_STREAM, [probe()], { expectedRevision: 0n })).rejects.toBeInstanceOf(WrongExpectedRevision);
      await other.close();
    });

    it('appendInTransaction commits and rolls back with the caller’s own writes', async () => {
      const stream = fresh();
      await opened.db.exec('CREATE TABLE IF NOT EXISTS guard_rows (stream text PRIMARY KEY, appended int NOT NULL)');
      await opened.db.transaction(async (tx) => {
        await tx.query('INSERT INTO guard_rows VALUES ($1, 1)', [stream]);
        await appendInTransaction(tx, stream, [probe()], { expectedRevision: 'no_stream' });
      });
      await expect(
        opened.db.transaction(async (tx) => {
          await tx.query('UPDATE guard_rows SET appended = 2 WHERE stream = $1', [stream]);
          await appendInTransaction(tx, stream, [probe()], { expectedRevision: 0n });
          throw new Error('the caller changes its mind');
        }),
      ).rejects.toThrow('the caller changes its mind');
      expect(await store.readStream(stream)).toHaveLength(1);
      const guard = await opened.db.query<{ appended: number }>('SELECT appended FROM guard_rows WHERE stream = $1', [stream]);
      expect(guard.rows[0]!.appended).toBe(1);
    });

    it('leaves the caller’s transaction usable after WrongExpectedRevision', async () => {
      const stream = fresh();
      await store.append(stream, [probe()]);
      const outcome = await opened.db.transaction(async (tx) => {
        const refused = await appendInTransaction(tx, stream, [probe()], { expectedRevision: 'no_stream' }).catch((e: unknown) => e);
        await appendInTransaction(tx, stream, [probe()], { expectedRevision: 0n });
        return refused;
      });
      expect(outcome).toBeInstanceOf(WrongExpectedRevision);
      expect(await store.readStream(stream)).toHaveLength(2);
    });

    it('stores only the new events of a batch that repeats some stored ids', async () => {
      const stream = fresh();
      const [a, b, c] = [probe(), probe(), probe()];
      await store.append(stream, [a, b]);
      const result = await store.append(stream, [b, c, a]);
      expect(result.nextRevision).toBe(2n);
      expect((await store.readStream(stream)).map((each) => each.id)).toEqual([a.id, b.id, c.id]);
    });

    it('refuses to change or remove a stored event', async () => {
      const stream = fresh();
      await store.append(stream, [probe()]);
      await expect(opened.db.query("UPDATE gl_events SET type = 'Changed' WHERE stream = $1", [stream])).rejects.toThrow(/append-only/);
      await expect(opened.db.query('DELETE FROM gl_events WHERE stream = $1', [stream])).rejects.toThrow(/append-only/);
    });

    it('wakes a live subscriber through NOTIFY, not the poll', async () => {
      const stream = fresh();
      const seen: RecordedEvent[] = [];
      const subscription = store.subscribe('start');
      const done = (async () => {
        for await (const each of subscription) if (each.stream === stream) seen.push(each);
      })();
      try {
        await store.append(stream, [probe()]);
        await waitFor(() => seen.length === 1, { timeoutMs: 50_000, description: 'the first event' });
        await store.append(stream, [probe()]);
        await waitFor(() => seen.length === 2, { timeoutMs: 50_000, description: 'the NOTIFY to wake the subscriber' });
      } finally {
        await subscription.close();
        await done;
      }
    });

    // PGlite cannot hold one transaction open while another connection appends: it has one connection.
    it.skipIf(target.name === 'pglite')(
      'holds events back behind an older open transaction, then delivers them without a NOTIFY',
      async () => {
        const stream = fresh();
        // An older transaction that writes nothing to the ledger, so its commit sends no NOTIFY.
        const older = await holdOlderTransaction(opened);
        const seen: RecordedEvent[] = [];
        const subscription = store.subscribe('start');
        const done = (async () => {
          for await (const each of subscription) if (each.stream === stream) seen.push(each);
        })();
        try {
          await store.append(stream, [probe(), probe()]);
          expect((await store.readAll('start', 1_000_000)).filter((each) => each.stream === stream)).toEqual([]);
          await older.end();
          await waitFor(() => seen.length === 2, { timeoutMs: 50_000, description: 'the held-back events' });
        } finally {
          await older.end();
          await subscription.close();
          await done;
        }
      },
    );
  });
});
