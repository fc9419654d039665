// The lines of an export of a tree kept through the EventStore port (portTree.ts): the leaves the tree stored
// beside the ledger's events as the port reads them now, paired in order as exportLedger.ts pairs the
// PostgreSQL ledger's, so the verifier (verify.ts) names an event changed, deleted, moved or inserted.
//
// On EventStoreDB an administrator can delete a stream (soft, or a tombstone), truncate it ($tb) or let it
// expire ($maxCount, $maxAge). Its events stay in $all until a scavenge removes them, but the stream no longer
// reads them: an event its own stream does not show is taken as gone, so a deleted or truncated stream shows
// as missing leaves before the scavenge as after it.
import type { Queryable } from '../../db/db.ts';
import { StreamDeleted, comparePositions, type Checkpoint, type EventStore, type Position, type RecordedEvent } from '../eventStore.ts';
import { leafEventOfRecorded, PORT_TREE_PAGE } from './portTree.ts';
import type { ExportLine } from './verify.ts';

/** Stored leaves read per query. */
const LEAF_PAGE = 5_000;

/** Streams whose first readable revision is remembered at once; past it the memory starts again. */
const STREAMS_REMEMBERED = 100_000;

/**
 * Whether an event is still read by its own stream: its revision at or after the stream's first readable one.
 * A stream that reads as empty (deleted) or as deleted for good (a tombstone) shows none of its events.
 */
export function streamVisibility(ledger: EventStore): (event: RecordedEvent) => Promise<boolean> {
  const firstReadable = new Map<string, bigint | null>();
  return async (event) => {
    let first = firstReadable.get(event.stream);
    if (first === undefined) {
      try {
        const [head] = await ledger.readStream(event.stream, { maxCount: 1 });
        first = head ? head.revision : null;
      } catch (error) {
        if (!(error instanceof StreamDeleted)) throw error;
        first = null;
      }
      if (firstReadable.size >= STREAMS_REMEMBERED) firstReadable.clear();
      firstReadable.set(event.stream, first);
    }
    return first !== null && event.revision >= first;
  };
}

interface StoredLeafRow {
  leaf_index: string;
  event_id: string;
  hash: string;
}

const positionOf = (row: { tx_id: string; global_position: string }): Position => ({ commit: BigInt(row.tx_id), prepare: BigInt(row.global_position) });

/** The export's lines for leaves [fromLeaf, toLeaf) of a tree kept through the port. */
export async function* portExportLines(db: Queryable, ledger: EventStore, fromLeaf: number, toLeaf: number): AsyncIterable<ExportLine> {
  if (fromLeaf === toLeaf) return;
  const { rows: bounds } = await db.query<{ leaf_index: string; tx_id: string; global_position: string }>(
    'SELECT leaf_index::text, tx_id::text, global_position::text FROM gl_merkle_leaves WHERE leaf_index IN ($1, $2)',
    [String(fromLeaf - 1), String(toLeaf - 1)],
  );
  const start = bounds.find((row) => Number(row.leaf_index) === fromLeaf - 1);
  const endRow = bounds.find((row) => Number(row.leaf_index) === toLeaf - 1);
  if (!endRow) throw new Error(`the tree has no leaf ${toLeaf - 1}`);
  const end = positionOf(endRow);
  const visible = streamVisibility(ledger);

  // The ledger's events after the leaf before `from`, up to the last exported leaf's position, as the port
  // reads them now and their streams still show them.
  let after: Checkpoint = start ? positionOf(start) : 'start';
  let page: RecordedEvent[] = [];
  let done = false;
  const nextEvent = async (): Promise<RecordedEvent | undefined> => {
    for (;;) {
      if (page.length === 0) {
        if (done) return undefined;
        const events = await ledger.readAll(after, PORT_TREE_PAGE);
        if (events.length < PORT_TREE_PAGE) done = true;
        if (events.length > 0) after = events.at(-1)!.position;
        page = events.filter((event) => comparePositions(event.position, end) <= 0).reverse();
        if (page.length < events.length) done = true;
        continue;
      }
      const event = page.pop()!;
      if (await visible(event)) return event;
    }
  };

  let pendingEvent = await nextEvent();
  let leaf = fromLeaf;
  for (let pageFrom = fromLeaf; pageFrom < toLeaf; pageFrom += LEAF_PAGE) {
    const { rows: stored } = await db.query<StoredLeafRow>(
      `SELECT l.leaf_index::text, l.event_id::text, encode(l.hash, 'hex') AS hash
         FROM gl_merkle_leaves l WHERE l.leaf_index >= $1 AND l.leaf_index < $2 ORDER BY l.leaf_index`,
      [String(pageFrom), String(Math.min(pageFrom + LEAF_PAGE, toLeaf))],
    );
    for (const claim of stored) {
      const storedClaim = { eventId: claim.event_id, hash: claim.hash };
      if (!pendingEvent) {
        yield { leaf, missing: true, stored: storedClaim };
      } else {
        yield { leaf, event: leafEventOfRecorded(pendingEvent), stored: storedClaim };
        pendingEvent = await nextEvent();
      }
      leaf++;
    }
  }
  // Events that sort inside the exported range but have no leaf: inserted after the fact.
  while (pendingEvent) {
    yield { leaf: leaf++, event: leafEventOfRecorded(pendingEvent) };
    pendingEvent = await nextEvent();
  }
}
