// The Merkle tree kept through the EventStore port (the path the service takes with EVENTSTORE_URL), driven
// here by the PostgreSQL adapter on PGlite and PostgreSQL: the same follower, export and verify that run over
// EventStoreDB, against a ledger a superuser can tamper with for real (the append-only trigger out of the way).
// The EventStoreDB specifics (positions, deleted and truncated streams) are in esdbMerkleTree.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { storageTargets, type TestDb } from '../../support/databases.ts';
import { appendSampleEvents, asSuperuser, ndjson, signedTree } from '../../support/merkleLedger.ts';
import type { Db } from '../../../src/db/db.ts';
import type { EventStore, RecordedEvent } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import {
  eventIdsAtPositions,
  exportLedger,
  findLeaf,
  leafEventOfRecorded,
  leafHash,
  rootOfLeaves,
  storedConsistencyProof,
  storedInclusionProof,
  storedRoot,
  verifyConsistency,
  verifyExport,
  verifyInclusion,
  verifyStoredLedger,
  type SignerKey,
} from '../../../src/ledger/verifiable/index.ts';

const ORIGIN = 'governance.test/port-ledger';

describe.each(storageTargets)('the Merkle tree kept through the EventStore port, on the $name adapter', (target) => {
  // One database for the file (opening one is the slow part); each test starts from an empty ledger and tree,
  // emptied as a superuser would.
  let opened: TestDb | undefined;
  let portStore: EventStore | undefined;
  beforeAll(async () => {
    opened = await target.open();
    portStore = createPostgresEventStore(opened.db, { pollIntervalMs: 250 });
  });
  afterAll(async () => {
    await portStore?.close();
    await opened?.dispose();
  });
  afterEach(async () => {
    await asSuperuser(opened!.db, [
      'DELETE FROM gl_events',
      'DELETE FROM gl_merkle_leaves',
      'DELETE FROM gl_merkle_nodes',
      'DELETE FROM gl_merkle_checkpoints',
      "DELETE FROM gl_checkpoints WHERE projection = 'ledger-merkle-tree'",
    ]);
  });

  async function ledgerWithTree(count: number): Promise<{ db: Db; store: EventStore; key: SignerKey; events: RecordedEvent[] }> {
    const { db } = opened!;
    const store = portStore!;
    await appendSampleEvents(store, count, `tenant-${randomUUID().slice(0, 8)}`);
    const key = await signedTree(db, count, { origin: ORIGIN, ledger: store });
    return { db, store, key, events: await store.readAll('start', 1_000) };
  }

  it("keeps the tree of the port's global order: positions, root, proofs, an export verified offline", async () => {
    const { db, store, key, events } = await ledgerWithTree(23);
    expect(events).toHaveLength(23);
    const leaves = events.map((event) => leafHash(leafEventOfRecorded(event)));
    const root = rootOfLeaves(leaves);
    expect((await storedRoot(db, 23)).equals(root)).toBe(true);
    const { rows } = await db.query<{ position: string }>("SELECT tx_id::text || ':' || global_position::text AS position FROM gl_merkle_leaves ORDER BY leaf_index");
    expect(rows.map((row) => row.position)).toEqual(events.map((event) => `${event.position.commit}:${event.position.prepare}`));
    for (const [i, event] of events.entries()) {
      expect((await findLeaf(db, event.id))?.leafIndex).toBe(i);
      expect(verifyInclusion(i, 23, leaves[i]!, await storedInclusionProof(db, i, 23), root)).toBe(true);
    }
    for (const from of [1, 7, 16, 22]) {
      expect(verifyConsistency(from, 23, rootOfLeaves(leaves.slice(0, from)), root, await storedConsistencyProof(db, from, 23))).toBe(true);
    }
    const position = `${events[3]!.position.commit}:${events[3]!.position.prepare}`;
    expect((await eventIdsAtPositions(db, [position])).get(position)).toBe(events[3]!.id);
    const { header, lines } = await exportLedger(db, { from: 5, to: 17 }, store);
    expect(await verifyExport(ndjson(header, lines), key)).toMatchObject({ ok: true, events: 12 });
    expect(await verifyStoredLedger(db, key, store)).toMatchObject({ ok: true, events: 23 });
  });

  describe('tampering as a superuser would do it, caught through the port', () => {
    async function expectCaught(db: Db, store: EventStore, key: SignerKey, eventId: string, reason: RegExp) {
      expect(await verifyStoredLedger(db, key, store)).toMatchObject({ ok: false, eventId, reason: expect.stringMatching(reason) });
      const { header, lines } = await exportLedger(db, { from: 0 }, store);
      expect(await verifyExport(ndjson(header, lines), key)).toMatchObject({ ok: false, eventId, reason: expect.stringMatching(reason) });
    }

    it("an event's data changed", async () => {
      const { db, store, key, events } = await ledgerWithTree(12);
      await asSuperuser(db, [`UPDATE gl_events SET data = jsonb_set(data, '{z}', '999') WHERE event_id = $1`], [[events[6]!.id]]);
      await expectCaught(db, store, key, events[6]!.id, /was changed after it was recorded/);
    });

    it('an event deleted', async () => {
      const { db, store, key, events } = await ledgerWithTree(12);
      await asSuperuser(db, ['DELETE FROM gl_events WHERE event_id = $1'], [[events[4]!.id]]);
      await expectCaught(db, store, key, events[4]!.id, /was deleted/);
    });

    it('two events swapped', async () => {
      const { db, store, key, events } = await ledgerWithTree(12);
      const [a, b] = [events[2]!, events[8]!];
      await asSuperuser(
        db,
        [
          'UPDATE gl_events SET global_position = -1, tx_id = $2::xid8 WHERE event_id = $1',
          'UPDATE gl_events SET global_position = $2, tx_id = $3::xid8 WHERE event_id = $1',
          'UPDATE gl_events SET global_position = $2, tx_id = $3::xid8 WHERE event_id = $1',
        ],
        [
          [a.id, String(a.position.commit)],
          [b.id, String(a.position.prepare), String(a.position.commit)],
          [a.id, String(b.position.prepare), String(b.position.commit)],
        ],
      );
      await expectCaught(db, store, key, a.id, /order was changed/);
    });

    it('an event inserted in the past', async () => {
      const { db, store, key, events } = await ledgerWithTree(12);
      const early = events[1]!;
      const forged = randomUUID();
      await asSuperuser(
        db,
        [
          `INSERT INTO gl_events (global_position, tx_id, event_id, stream, revision, type, data, metadata)
           VALUES ($1, $2::xid8, $3, 'tenant-forged', 0, 'LimitSet', '{"limit": 1000000}', '{}')`,
        ],
        [[String(early.position.prepare + 1_000_000n), String(early.position.commit), forged]],
      );
      await expectCaught(db, store, key, forged, /inserted after the fact/);
    });
  });
});
