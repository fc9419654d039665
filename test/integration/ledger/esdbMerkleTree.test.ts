// The ledger's Merkle tree on EventStoreDB, kept beside the read models (PGlite here) through the EventStore
// port, over the EventStoreDB adapter and a fake of the client's boundary that behaves as a server does for
// what the tree relies on: $all in commit order with its system records, $all positions far past 32 bits,
// stream reads that honour stream metadata (a truncation, $tb), soft deletes and tombstones, and a scavenge
// that removes what those hide from $all. A real server runs the same through esdbEventStore.test.ts when
// EVENTSTORE_URL is set.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StreamDeletedError, StreamNotFoundError } from '@eventstore/db-client';
import type { Db } from '../../../src/db/db.ts';
import { openTestPglite } from '../../support/pgliteSeeds.ts';
import { ndjson } from '../../support/merkleLedger.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createEventStoreDbEventStore, type EsdbClient } from '../../../src/ledger/eventstoredb/index.ts';
import {
  appendPortTreePage,
  defaultOrigin,
  eventIdsAtPositions,
  exportLedger,
  findLeaf,
  latestCheckpoint,
  leafEventOfRecorded,
  leafHash,
  leafIndexesOf,
  rootOfLeaves,
  signCheckpoint,
  signerKey,
  startMerkleTree,
  startVerifiableLedger,
  storedInclusionProof,
  storedRoot,
  TreeOfAnotherLedger,
  verifyExport,
  verifyInclusion,
  verifyStoredLedger,
  type SignerKey,
} from '../../../src/ledger/verifiable/index.ts';

interface FakeRecord {
  streamId: string;
  id: string;
  revision: bigint;
  type: string;
  data: unknown;
  metadata: unknown;
  isJson: true;
  created: Date;
  position: { commit: bigint; prepare: bigint };
}

interface FakeStream {
  next: bigint;
  /** $tb: events before this revision no longer read. */
  truncateBefore: bigint;
  state: 'live' | 'deleted' | 'tombstoned';
}

/** A read call as the client returns it: an object stream of resolved events, with cancel(). */
function readOf(records: readonly FakeRecord[]) {
  const read = Readable.from(
    records.map((event) => ({ event })),
    { objectMode: true },
  ) as Readable & { cancel: () => Promise<void> };
  read.cancel = async () => {};
  return read;
}

/** What the tree needs of an EventStoreDB server: its log ($all), its streams' state, a scavenge. */
class FakeServer {
  log: FakeRecord[] = [];
  streams = new Map<string, FakeStream>();
  // Past 2^40: positions are byte offsets in the server's log, not counters.
  private position = 1_099_511_627_776n;
  private clock = Date.parse('2026-12-01T10:00:00.000Z');

  constructor(readonly ledgerId: string = randomUUID()) {
    this.write('governance-ledger-identity', [{ type: 'LedgerIdentified', data: { ledgerId } }]);
  }

  /** One append: one commit position for the batch, a prepare position per event (as a multi-event write). */
  write(streamId: string, events: { type: string; data: unknown; metadata?: unknown; id?: string }[]): FakeRecord[] {
    const stream = this.streams.get(streamId) ?? { next: 0n, truncateBefore: 0n, state: 'live' as const };
    this.streams.set(streamId, stream);
    const commit = this.position;
    const written = events.map((event, i) => ({
      streamId,
      id: event.id ?? randomUUID(),
      revision: stream.next++,
      type: event.type,
      data: event.data,
      metadata: event.metadata ?? {},
      isJson: true as const,
      created: new Date((this.clock += 7)),
      position: { commit, prepare: commit + BigInt(i) * 211n },
    }));
    this.position += 100_003n;
    this.log.push(...written);
    return written;
  }

  /** What an administrator does to a stream: its metadata is a system record in $all, as on a server. */
  truncate(streamId: string, before: bigint): void {
    this.streams.get(streamId)!.truncateBefore = before;
    this.write(`$$${streamId}`, [{ type: '$metadata', data: { $tb: Number(before) } }]);
  }

  softDelete(streamId: string): void {
    const stream = this.streams.get(streamId)!;
    stream.state = 'deleted';
    stream.truncateBefore = stream.next;
    this.write(`$$${streamId}`, [{ type: '$metadata', data: { $tb: Number(stream.next) } }]);
  }

  tombstone(streamId: string): void {
    this.write(streamId, [{ type: '$streamDeleted', data: {} }]);
    this.streams.get(streamId)!.state = 'tombstoned';
  }

  /** Removes from $all every event its stream no longer reads. */
  scavenge(): void {
    this.log = this.log.filter((event) => {
      const stream = this.streams.get(event.streamId);
      return !stream || (stream.state === 'live' && event.revision >= stream.truncateBefore) || event.type.startsWith('$');
    });
  }

  readonly client = {
    readAll: (options: { fromPosition: 'start' | 'end' | { commit: bigint; prepare: bigint }; direction: 'forwards' | 'backwards'; maxCount: number }) => {
      const compare = (a: FakeRecord, from: { commit: bigint; prepare: bigint }) =>
        a.position.commit !== from.commit ? (a.position.commit < from.commit ? -1 : 1) : a.position.prepare < from.prepare ? -1 : a.position.prepare > from.prepare ? 1 : 0;
      const { fromPosition: from, direction, maxCount } = options;
      let records: FakeRecord[];
      if (direction === 'forwards') {
        // Forwards from a position includes it; from the start, everything.
        records = typeof from === 'object' ? this.log.filter((event) => compare(event, from) >= 0) : from === 'end' ? [] : [...this.log];
      } else {
        // Backwards from a position excludes it; from the end, everything.
        records = (typeof from === 'object' ? this.log.filter((event) => compare(event, from) < 0) : from === 'start' ? [] : [...this.log]).reverse();
      }
      return readOf(records.slice(0, maxCount));
    },
    readStream: (streamId: string, options: { fromRevision: 'start' | 'end' | bigint; direction: 'forwards' | 'backwards'; maxCount?: number }) => {
      const stream = this.streams.get(streamId);
      if (!stream || stream.state === 'deleted') return readFailing(new StreamNotFoundError(undefined, streamId));
      if (stream.state === 'tombstoned') return readFailing(new StreamDeletedError(undefined, streamId));
      const readable = this.log.filter((event) => event.streamId === streamId && event.revision >= stream.truncateBefore);
      const { fromRevision: from, direction, maxCount = Number.MAX_SAFE_INTEGER } = options;
      const records =
        direction === 'forwards'
          ? readable.filter((event) => from === 'start' || (from !== 'end' && event.revision >= from))
          : readable.filter((event) => from === 'end' || (from !== 'start' && event.revision <= from)).reverse();
      return readOf(records.slice(0, maxCount));
    },
    appendToStream: async () => {
      throw new Error('the tree never appends');
    },
    subscribeToAll: () => {
      throw new Error('the tree reads pages');
    },
    dispose: async () => {},
  };
}

function readFailing(error: Error) {
  const read = Readable.from(
    (async function* () {
      yield* [];
      throw error;
    })(),
    { objectMode: true },
  ) as Readable & { cancel: () => Promise<void> };
  read.cancel = async () => {};
  return read;
}

const ORIGIN = 'governance.test/esdb-ledger';

describe('the verifiable ledger on EventStoreDB (the adapter over a fake server, the tree in PGlite)', () => {
  // One database for the file (opening one is the slow part); each test starts from an empty tree.
  let db: Db;
  let store: EventStore | undefined;
  beforeAll(async () => {
    db = await openTestPglite({ migrate: true });
  });
  afterAll(async () => {
    await db?.close();
  });
  afterEach(async () => {
    await store?.close();
    store = undefined;
    for (const table of ['gl_merkle_leaves', 'gl_merkle_nodes', 'gl_merkle_checkpoints']) await db.query(`DELETE FROM ${table}`);
    await db.query("DELETE FROM gl_checkpoints WHERE projection = 'ledger-merkle-tree'");
  });

  /** A server with `count` ledger events over three tenant streams and the governance stream, and EventStoreDB's own records between them. */
  async function ledgerWithTree(count: number): Promise<{ server: FakeServer; db: Db; store: EventStore; key: SignerKey; events: FakeRecord[] }> {
    const server = new FakeServer();
    const events: FakeRecord[] = [];
    for (let i = 0; i < count; i += 3) {
      events.push(
        ...server.write(
          i % 2 === 0 ? `tenant-${i % 3}` : 'governance-admissions',
          Array.from({ length: Math.min(3, count - i) }, (_, j) => ({
            type: 'LimitSet',
            data: { z: i + j, a: { limit: 1.5, tags: ['x', 'é'] }, big: 12345678901234 },
            metadata: { actor: 'auditor-test', reason: `step ${i + j}` },
          })),
        ),
      );
      if (i % 6 === 0) server.write('$stats-127.0.0.1:2113', [{ type: '$statsCollected', data: {} }]);
    }
    store = createEventStoreDbEventStore(server.client as unknown as EsdbClient);
    const tree = startMerkleTree(db, { ledger: store, paceMs: 0, pollMs: 50, pageSize: 4 });
    try {
      expect((await tree.catchUp()).size).toBe(count);
    } finally {
      await tree.close();
    }
    const key = signerKey(ORIGIN, generateKeyPairSync('ed25519').privateKey);
    expect(await signCheckpoint(db, key)).toBeDefined();
    return { server, db, store, key, events };
  }

  it('keeps the tree over $all in commit order, positions as $all gives them; proofs, export and verify hold', async () => {
    const { db, store, key, events } = await ledgerWithTree(20);
    // The leaves are the ledger's events in $all order: no system record, not the adapter's identity stream.
    const recorded = await store.readAll('start', 100);
    expect(recorded.map((event) => event.id)).toEqual(events.map((event) => event.id));
    const leaves = recorded.map((event) => leafHash(leafEventOfRecorded(event)));
    const root = rootOfLeaves(leaves);
    expect((await storedRoot(db, 20)).equals(root)).toBe(true);
    expect((await latestCheckpoint(db))!.rootHash.equals(root)).toBe(true);
    // Leaf i is the i-th event; its stored position is the $all position (past 2^40), not a transaction id.
    const { rows } = await db.query<{ tx_id: string; global_position: string }>(
      'SELECT l.tx_id::text AS tx_id, l.global_position::text AS global_position FROM gl_merkle_leaves l ORDER BY l.leaf_index',
    );
    expect(rows.map((row) => `${row.tx_id}:${row.global_position}`)).toEqual(events.map((event) => `${event.position.commit}:${event.position.prepare}`));
    for (const [i, event] of recorded.entries()) {
      expect((await findLeaf(db, event.id))?.leafIndex).toBe(i);
      expect(verifyInclusion(i, 20, leaves[i]!, await storedInclusionProof(db, i, 20), root)).toBe(true);
    }
    // An answer folded from an event names it by its position: only the tree knows it on EventStoreDB.
    const position = `${events[5]!.position.commit}:${events[5]!.position.prepare}`;
    expect(await eventIdsAtPositions(db, [position])).toEqual(new Map([[position, events[5]!.id]]));
    expect(await leafIndexesOf(db, [events[5]!.id])).toEqual(new Map([[events[5]!.id, 5]]));
    // An export of a range (by the time its events were recorded) verifies offline with the key alone.
    const { header, lines } = await exportLedger(db, { from: events[4]!.created, to: events[13]!.created }, store);
    expect([header.fromLeaf, header.toLeaf]).toEqual([4, 13]);
    const offline = await verifyExport(ndjson(header, lines), key);
    expect(offline).toMatchObject({ ok: true, events: 9 });
    expect(await verifyStoredLedger(db, key, store)).toMatchObject({ ok: true, events: 20 });
  });

  it('adds only what $all appends later, and signs the grown tree consistent with the first', async () => {
    const { server, db, store, key } = await ledgerWithTree(7);
    server.write('tenant-late', [{ type: 'LimitSet', data: { n: 1 } }, { type: 'LimitSet', data: { n: 2 } }]);
    expect(await appendPortTreePage(db, store, 500)).toBe(2);
    expect(await appendPortTreePage(db, store, 500)).toBe(0);
    expect(await signCheckpoint(db, key)).toMatchObject({ treeSize: 9 });
    expect(await verifyStoredLedger(db, key, store)).toMatchObject({ ok: true, events: 9 });
  });

  describe('what an EventStoreDB administrator can do, caught and named', () => {
    it('a stream deleted (soft): its events, still in $all until a scavenge, are missing leaves', async () => {
      const { server, db, store, key, events } = await ledgerWithTree(12);
      const first = events.find((event) => event.streamId === 'tenant-0')!;
      server.softDelete('tenant-0');
      expect(await verifyStoredLedger(db, key, store)).toMatchObject({ ok: false, eventId: first.id, reason: expect.stringMatching(/was deleted/) });
      server.scavenge();
      expect(await verifyStoredLedger(db, key, store)).toMatchObject({ ok: false, eventId: first.id, reason: expect.stringMatching(/was deleted/) });
    });

    it('a stream truncated ($tb): the events before the truncation are missing leaves', async () => {
      const { server, db, store, key, events } = await ledgerWithTree(12);
      const first = events.find((event) => event.streamId === 'governance-admissions')!;
      server.truncate('governance-admissions', 2n);
      const verdict = await verifyStoredLedger(db, key, store);
      expect(verdict).toMatchObject({ ok: false, eventId: first.id, reason: expect.stringMatching(/was deleted/) });
      // Offline, from the export an auditor is handed, alike.
      const { header, lines } = await exportLedger(db, { from: 0 }, store);
      expect(await verifyExport(ndjson(header, lines), key)).toMatchObject({ ok: false, eventId: first.id });
    });

    it('a stream deleted for good (a tombstone), then scavenged: missing leaves', async () => {
      const { server, db, store, key, events } = await ledgerWithTree(12);
      const first = events.find((event) => event.streamId === 'tenant-0')!;
      server.tombstone('tenant-0');
      expect(await verifyStoredLedger(db, key, store)).toMatchObject({ ok: false, eventId: first.id, reason: expect.stringMatching(/was deleted/) });
      server.scavenge();
      expect(await verifyStoredLedger(db, key, store)).toMatchObject({ ok: false, eventId: first.id, reason: expect.stringMatching(/was deleted/) });
    });

    it('an event written again under an id the tree holds (its stream deleted first): the tree stops, loudly, and the deletion is named', async () => {
      const { server, db, store, key, events } = await ledgerWithTree(6);
      const victim = events[0]!;
      server.softDelete(victim.streamId);
      server.write('tenant-rewritten', [{ id: victim.id, type: 'LimitSet', data: { z: 0, limit: 1_000_000 } }]);
      // An event id is a leaf's key: the copy is refused (each pass reports it), the tree is left as it was.
      await expect(appendPortTreePage(db, store, 500)).rejects.toThrow(/duplicate key|unique/i);
      expect(await verifyStoredLedger(db, key, store)).toMatchObject({ ok: false, eventId: victim.id, reason: expect.stringMatching(/was deleted/) });
    });

    it('the service reports it: onVerificationFailed, the tree going on', async () => {
      const dataDir = await mkdtemp(path.join(tmpdir(), 'esdb-verifiable-'));
      try {
        const { server, db, store, events } = await ledgerWithTree(6);
        const failures: string[] = [];
        const verifiable = await startVerifiableLedger(db, {
          ledger: store,
          dataDir,
          checkpointSeconds: 3_600,
          verifySeconds: 0,
          onVerificationFailed: (verdict) => failures.push(verdict.eventId ?? ''),
        });
        try {
          // Named by the EventStoreDB ledger's own identity, not the database's.
          expect(verifiable.key.name).toBe(defaultOrigin(server.ledgerId));
          // The tree was signed with another key above: this ledger's own checkpoints start after it.
          await db.query('DELETE FROM gl_merkle_checkpoints');
          server.write('tenant-late', [{ type: 'LimitSet', data: { n: 1 } }]);
          await verifiable.tree.catchUp();
          expect(await verifiable.checkpointNow()).toMatchObject({ treeSize: 7 });
          expect(await verifiable.verifyNow()).toMatchObject({ ok: true });
          server.softDelete(events[0]!.streamId);
          expect(await verifiable.verifyNow()).toMatchObject({ ok: false, eventId: events[0]!.id });
          expect(failures).toEqual([events[0]!.id]);
        } finally {
          await verifiable.close();
        }
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  });

  it('refuses to extend a tree built over another ledger (the server was replaced), and leaves it as it is', async () => {
    const { db, store } = await ledgerWithTree(5);
    const other = new FakeServer();
    other.write('tenant-0', [{ type: 'LimitSet', data: { n: 1 } }]);
    const otherStore = createEventStoreDbEventStore(other.client as unknown as EsdbClient);
    try {
      await expect(appendPortTreePage(db, otherStore, 500)).rejects.toBeInstanceOf(TreeOfAnotherLedger);
      const { rows } = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM gl_merkle_leaves');
      expect(rows[0]!.n).toBe('5');
      expect(await appendPortTreePage(db, store, 500)).toBe(0);
    } finally {
      await otherStore.close();
    }
  });
});
