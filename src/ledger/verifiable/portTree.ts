// The ledger's Merkle tree kept through the EventStore port: how the tree follows a ledger whose events are not
// in this database (EVENTSTORE_URL: EventStoreDB / KurrentDB). Pages of `readAll` (on EventStoreDB, $all in
// commit order, system events left out as every reader of the port sees it) become leaves in the tables of the
// PostgreSQL ledger's tree, in the read models' database: leaf i is the i-th ledger event of that order, and
// its stored position is the port's (EventStoreDB: $all commit and prepare positions). Proofs, checkpoints and
// the API read those tables alike, whichever ledger built them (docs/verifiable-ledger.md, "On EventStoreDB").
import type { Db } from '../../db/db.ts';
import { eventData, type Checkpoint, type EventStore, type LedgerIdentity, type RecordedEvent } from '../eventStore.ts';
import { leafHash, type LeafEvent } from './leaf.ts';
import { checkTreeLedger, MERKLE_TREE_READER, readTreeHead, storeLeaves, TREE_LOCK, type TreeHead } from './treeStore.ts';

/**
 * Leaves per page read through the port at most: the projection runner's page (src/ledger/projectionRunner.ts).
 * The port has no stored sizes to cut a page by, and an EventStoreDB event is at most MAX_APPEND_BYTES.
 */
export const PORT_TREE_PAGE = 500;

/**
 * A recorded time in the leaf's form. The port gives a Date: milliseconds (EventStoreDB's client turns the
 * server's 100 ns ticks into one), so the six fraction digits end in three zeros.
 */
export function recordedAtText(at: Date): string {
  return at.toISOString().replace(/Z$/, '000Z');
}

/** The canonical leaf of an event read through the port (leaf.ts): the same members, in the same text forms. */
export function leafEventOfRecorded(event: RecordedEvent): LeafEvent {
  return {
    id: event.id.toLowerCase(),
    stream: event.stream,
    revision: event.revision.toString(),
    type: event.type,
    data: eventData(event),
    metadata: event.metadata,
    recordedAt: recordedAtText(event.recordedAt),
  };
}

/** Where the port is read from after the tree's last leaf. */
export function afterTreeHead(head: TreeHead): Checkpoint {
  return head.last ? { commit: BigInt(head.last.txId), prepare: BigInt(head.last.globalPosition) } : 'start';
}

/**
 * Adds the next page of the ledger, as the port reads it, to the tree. The page is read before the tree's
 * transaction (the port may be this very database, e.g. PGlite's one connection); under the tree's lock the
 * head is read again, and a page another writer (a replica) has taken meanwhile is not stored twice. Returns
 * how many leaves it added.
 */
export async function appendPortTreePage(db: Db, ledger: EventStore, maxLeaves: number = PORT_TREE_PAGE, identity?: LedgerIdentity): Promise<number> {
  const ledgerIdentity = identity ?? (await ledger.identity());
  const before = await readTreeHead(db);
  // Before reading: a tree of another ledger is refused even when this one has nothing after its head.
  await checkTreeLedger(db, before, ledgerIdentity);
  const events = await ledger.readAll(afterTreeHead(before), maxLeaves);
  if (events.length === 0) return 0;
  return db.transaction(async (tx) => {
    await tx.query(`SELECT ${TREE_LOCK}`);
    const head = await readTreeHead(tx);
    let fresh = events;
    if (head.size !== before.size) {
      await checkTreeLedger(tx, head, ledgerIdentity);
      const last = head.last;
      const at = last ? events.findIndex((event) => event.position.commit === BigInt(last.txId) && event.position.prepare === BigInt(last.globalPosition)) : -1;
      if (at < 0) return 0;
      fresh = events.slice(at + 1);
      if (fresh.length === 0) return 0;
    }
    await storeLeaves(
      tx,
      head,
      fresh.map((event) => ({
        hash: leafHash(leafEventOfRecorded(event)),
        eventId: event.id.toLowerCase(),
        commit: event.position.commit.toString(),
        prepare: event.position.prepare.toString(),
        summaryDay: null,
        recordedAt: event.recordedAt.toISOString(),
      })),
    );
    // The tree's place in the ledger and the ledger it was built over (checkTreeLedger).
    const last = fresh.at(-1)!.position;
    await tx.query(
      `INSERT INTO gl_checkpoints (projection, version, commit_position, prepare_position, ledger_kind, ledger_id, updated_at)
       VALUES ($1, 1, $2::bigint, $3::bigint, $4, $5, now())
       ON CONFLICT (projection) DO UPDATE SET commit_position = EXCLUDED.commit_position, prepare_position = EXCLUDED.prepare_position,
         ledger_kind = EXCLUDED.ledger_kind, ledger_id = EXCLUDED.ledger_id, updated_at = now()`,
      [MERKLE_TREE_READER.name, last.commit.toString(), last.prepare.toString(), ledgerIdentity.kind, ledgerIdentity.id],
    );
    return fresh.length;
  });
}
