// The ledger's Merkle tree in PostgreSQL/PGlite (migration 0130): leaves and complete subtrees appended by
// one writer at a time, in the ledger's global order, and the roots and proofs read from them.
import type { Queryable } from '../../db/db.ts';
import { countWithinPageBudget, STORED_BYTES_SQL } from '../readPageBudget.ts';
import { leafHash, type LeafEvent } from './leaf.ts';
import { consistencyProofRanges, fullSubtrees, hashChildren, inclusionProofRanges, nodesForRanges, rangeHash, type NodeId, type Range } from './merkle.ts';

const SUMMARY_STREAM = 'governance-admissions';

/** The global order, read below every open transaction exactly as the ledger's readers do (postgres/read.ts). */
const READABLE = 'tx_id < pg_snapshot_xmin(pg_current_snapshot())';

/**
 * The columns a leaf needs, as text where a parsed value would lose anything (microseconds, 64-bit revisions). The
 * positions are text too: a query orders by the table's columns, qualified (`g.tx_id`), never by these.
 */
export const LEAF_COLUMNS = `event_id::text AS id, stream, revision::text AS revision, type, data::text AS data, metadata::text AS metadata,
  to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS recorded_at,
  tx_id::text AS tx_id, global_position::text AS global_position,
  CASE WHEN stream = '${SUMMARY_STREAM}' THEN to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') END AS summary_day`;

export interface LeafRow {
  id: string;
  stream: string;
  revision: string;
  type: string;
  data: string;
  metadata: string;
  recorded_at: string;
  tx_id: string;
  global_position: string;
  summary_day: string | null;
}

export function leafEventOf(row: LeafRow): LeafEvent {
  return {
    id: row.id,
    stream: row.stream,
    revision: row.revision,
    type: row.type,
    data: JSON.parse(row.data),
    metadata: JSON.parse(row.metadata),
    recordedAt: row.recorded_at,
  };
}

/** Events after a position in the global order, readable ones only, with what their leaves need. */
export const EVENTS_AFTER_SQL = `
SELECT ${LEAF_COLUMNS} FROM gl_events g
WHERE (g.tx_id, g.global_position) > ($1::xid8, $2::bigint) AND g.${READABLE}
ORDER BY g.tx_id, g.global_position
LIMIT $3`;

/** The stored (compressed) size of the next events' data and metadata: a page is cut to a byte budget. */
const EVENT_SIZES_SQL = `
SELECT ${STORED_BYTES_SQL} AS bytes FROM gl_events g
WHERE (g.tx_id, g.global_position) > ($1::xid8, $2::bigint) AND g.${READABLE}
ORDER BY g.tx_id, g.global_position
LIMIT $3`;

/** How many of the next `maxLeaves` events fit a page's byte budget (readPageBudget.ts). Later commits only sort after these. */
async function eventsWithinBudget(tx: Queryable, after: [string, string], maxLeaves: number): Promise<number> {
  const { rows } = await tx.query<{ bytes: number }>(EVENT_SIZES_SQL, [...after, maxLeaves]);
  return countWithinPageBudget(rows.map((row) => Number(row.bytes)));
}


export interface TreeHead {
  size: number;
  /** The last leaf's event position, or undefined for the empty tree. */
  last?: { txId: string; globalPosition: string };
}

export async function readTreeHead(db: Queryable): Promise<TreeHead> {
  const { rows } = await db.query<{ leaf_index: string; tx_id: string; global_position: string }>(
    'SELECT l.leaf_index::text AS leaf_index, l.tx_id::text AS tx_id, l.global_position::text AS global_position FROM gl_merkle_leaves l ORDER BY l.leaf_index DESC LIMIT 1',
  );
  const row = rows[0];
  return row ? { size: Number(row.leaf_index) + 1, last: { txId: row.tx_id, globalPosition: row.global_position } } : { size: 0 };
}

const nodeKey = (level: number, index: number) => `${level}/${index}`;

/** Reads the stored nodes, level 0 being the leaves; a missing node is a fault (the tree is not that far yet). */
export async function readNodes(db: Queryable, ids: readonly NodeId[]): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  const leaves = ids.filter((id) => id.level === 0).map((id) => String(id.index));
  const inner = ids.filter((id) => id.level > 0);
  if (leaves.length > 0) {
    const { rows } = await db.query<{ leaf_index: string; hash: string }>(
      `SELECT leaf_index::text, encode(hash, 'hex') AS hash FROM gl_merkle_leaves WHERE leaf_index = ANY($1::bigint[])`,
      [leaves],
    );
    for (const row of rows) found.set(nodeKey(0, Number(row.leaf_index)), Buffer.from(row.hash, 'hex'));
  }
  if (inner.length > 0) {
    const { rows } = await db.query<{ level: number; node_index: string; hash: string }>(
      `SELECT n.level, n.node_index::text, encode(n.hash, 'hex') AS hash
         FROM unnest($1::smallint[], $2::bigint[]) AS want(level, node_index)
         JOIN gl_merkle_nodes n ON n.level = want.level AND n.node_index = want.node_index`,
      [inner.map((id) => id.level), inner.map((id) => String(id.index))],
    );
    for (const row of rows) found.set(nodeKey(Number(row.level), Number(row.node_index)), Buffer.from(row.hash, 'hex'));
  }
  return found;
}

/** MTH of each range, from the stored nodes. */
export async function storedRangeHashes(db: Queryable, ranges: readonly Range[]): Promise<Buffer[]> {
  const nodes = await readNodes(db, nodesForRanges(ranges));
  const node = (level: number, index: number) => {
    const hash = nodes.get(nodeKey(level, index));
    if (!hash) throw new Error(`the Merkle tree has no stored node at level ${level}, index ${index}`);
    return hash;
  };
  return ranges.map(([start, end]) => rangeHash(start, end, node));
}

/** The root of the tree of the first `size` leaves (size <= the stored tree's). */
export async function storedRoot(db: Queryable, size: number): Promise<Buffer> {
  if (size === 0) return rangeHash(0, 0, () => Buffer.alloc(0));
  return (await storedRangeHashes(db, [[0, size]]))[0]!;
}

export async function storedInclusionProof(db: Queryable, leafIndex: number, treeSize: number): Promise<Buffer[]> {
  return storedRangeHashes(db, inclusionProofRanges(leafIndex, treeSize));
}

export async function storedConsistencyProof(db: Queryable, fromSize: number, toSize: number): Promise<Buffer[]> {
  return storedRangeHashes(db, consistencyProofRanges(fromSize, toSize));
}

export interface StoredLeaf {
  leafIndex: number;
  eventId: string;
  hash: Buffer;
}

export async function findLeaf(db: Queryable, eventId: string): Promise<StoredLeaf | undefined> {
  const { rows } = await db.query<{ leaf_index: string; event_id: string; hash: string }>(
    `SELECT leaf_index::text, event_id::text, encode(hash, 'hex') AS hash FROM gl_merkle_leaves WHERE event_id = $1::uuid`,
    [eventId],
  );
  const row = rows[0];
  return row ? { leafIndex: Number(row.leaf_index), eventId: row.event_id, hash: Buffer.from(row.hash, 'hex') } : undefined;
}

/** A leaf to store: its hash, its event, and the event's position in the port's two parts (postgres: tx id, global_position; EventStoreDB: $all commit, prepare), in decimal. */
export interface NewLeaf {
  hash: Buffer;
  eventId: string;
  commit: string;
  prepare: string;
  /** The UTC day of an admission summary of the PostgreSQL ledger (archived days), else null. */
  summaryDay: string | null;
  /** When the event was recorded, for a tree whose events are not in this database (portTree.ts), else null. */
  recordedAt: string | null;
}

/**
 * Stores `leaves` as leaves [head.size, head.size + n) and every complete subtree they finish, from the right
 * edge of the stored tree. The caller holds the tree's lock (TREE_LOCK) in `tx` and read `head` under it.
 */
export async function storeLeaves(tx: Queryable, head: TreeHead, leaves: readonly NewLeaf[]): Promise<void> {
  // The right edge: the complete subtrees of [0, size), largest first, each waiting for a right sibling.
  const edgeIds = fullSubtrees(0, head.size);
  const edgeHashes = await readNodes(tx, edgeIds);
  const edge = edgeIds.map((id) => ({ ...id, hash: edgeHashes.get(nodeKey(id.level, id.index))! }));
  if (edge.some((node) => !node.hash)) throw new Error('the Merkle tree is missing a stored node on its right edge');

  const leafIndexes: string[] = [];
  const leafHashes: string[] = [];
  const nodeLevels: number[] = [];
  const nodeIndexes: string[] = [];
  const nodeHashes: string[] = [];
  let index = head.size;
  for (const leaf of leaves) {
    let node = { level: 0, index, hash: leaf.hash };
    leafIndexes.push(String(index));
    leafHashes.push(node.hash.toString('hex'));
    while (edge.length > 0 && edge.at(-1)!.level === node.level) {
      const left = edge.pop()!;
      node = { level: node.level + 1, index: left.index / 2, hash: hashChildren(left.hash, node.hash) };
      nodeLevels.push(node.level);
      nodeIndexes.push(String(node.index));
      nodeHashes.push(node.hash.toString('hex'));
    }
    edge.push(node);
    index++;
  }
  await tx.query(
    `INSERT INTO gl_merkle_leaves (leaf_index, event_id, tx_id, global_position, summary_day, hash, recorded_at)
     SELECT i, e::uuid, t::xid8, g, d::date, decode(h, 'hex'), r::timestamptz
       FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[]) AS l(i, e, t, g, d, h, r)`,
    [
      leafIndexes,
      leaves.map((leaf) => leaf.eventId),
      leaves.map((leaf) => leaf.commit),
      leaves.map((leaf) => leaf.prepare),
      leaves.map((leaf) => leaf.summaryDay),
      leafHashes,
      leaves.map((leaf) => leaf.recordedAt),
    ],
  );
  if (nodeLevels.length > 0) {
    await tx.query(
      `INSERT INTO gl_merkle_nodes (level, node_index, hash)
       SELECT l, i, decode(h, 'hex') FROM unnest($1::smallint[], $2::bigint[], $3::text[]) AS n(l, i, h)`,
      [nodeLevels, nodeIndexes, nodeHashes],
    );
  }
}

/** The stored tree was built over another ledger than the one read now: extending it would mix two ledgers. */
export class TreeOfAnotherLedger extends Error {
  override readonly name = 'TreeOfAnotherLedger';
  constructor(
    readonly tree: { kind: string; id: string },
    readonly ledger: { kind: string; id: string },
  ) {
    super(
      `the Merkle tree in this database was built over the ${tree.kind} ledger ${tree.id}, not over the ${ledger.kind} ledger ${ledger.id} read now: ` +
        'it is left as it is (its checkpoints stay provable); docs/verifiable-ledger.md says how to start a tree for the new ledger',
    );
  }
}

/** Refuses to extend a non-empty tree recorded (gl_checkpoints, MERKLE_TREE_READER) as another ledger's. */
export async function checkTreeLedger(tx: Queryable, head: TreeHead, ledger: { kind: string; id: string }): Promise<void> {
  if (head.size === 0) return;
  const { rows } = await tx.query<{ ledger_kind: string | null; ledger_id: string | null }>(
    'SELECT ledger_kind, ledger_id FROM gl_checkpoints WHERE projection = $1',
    [MERKLE_TREE_READER.name],
  );
  const row = rows[0];
  if (row?.ledger_kind && row.ledger_id && (row.ledger_kind !== ledger.kind || row.ledger_id !== ledger.id)) {
    throw new TreeOfAnotherLedger({ kind: row.ledger_kind, id: row.ledger_id }, ledger);
  }
}

export const TREE_LOCK = "pg_advisory_xact_lock(hashtext('governance-ledger merkle tree'), hashtext(current_schema()))";

/**
 * Appends the next page of the global order to the tree in one transaction: takes the tree's lock (one writer
 * per schema; two replicas queue), reads the head and the right edge of complete subtrees, hashes each event's
 * leaf and stores the leaves and every subtree they complete. Returns how many leaves it added.
 */
export async function appendTreePage(db: { transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T> }, maxLeaves: number): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.query(`SELECT ${TREE_LOCK}`);
    const head = await readTreeHead(tx);
    if (head.size > 0) {
      const { rows: identity } = await tx.query<{ id: string }>('SELECT id::text AS id FROM gl_ledger_identity');
      await checkTreeLedger(tx, head, { kind: 'postgres', id: identity[0]!.id });
    }
    const after: [string, string] = [head.last?.txId ?? '0', head.last?.globalPosition ?? '0'];
    const count = await eventsWithinBudget(tx, after, maxLeaves);
    if (count === 0) return 0;
    const { rows } = await tx.query<LeafRow>(EVENTS_AFTER_SQL, [...after, count]);
    if (rows.length === 0) return 0;

    await storeLeaves(
      tx,
      head,
      rows.map((row) => ({
        hash: leafHash(leafEventOf(row)),
        eventId: row.id,
        commit: row.tx_id,
        prepare: row.global_position,
        summaryDay: row.summary_day,
        recordedAt: null,
      })),
    );
    // The tree's place in the global order, where retention looks for its readers (gl_checkpoints): a day of
    // summaries is archived only once the tree has its leaves.
    const last = rows.at(-1)!;
    await tx.query(
      `INSERT INTO gl_checkpoints (projection, version, commit_position, prepare_position, ledger_kind, ledger_id, updated_at)
       SELECT $1, 1, $2::xid8::text::bigint, $3::bigint, 'postgres', id::text, now() FROM gl_ledger_identity
       ON CONFLICT (projection) DO UPDATE SET commit_position = EXCLUDED.commit_position, prepare_position = EXCLUDED.prepare_position,
         ledger_kind = EXCLUDED.ledger_kind, ledger_id = EXCLUDED.ledger_id, updated_at = now()`,
      [MERKLE_TREE_READER.name, last.tx_id, last.global_position],
    );
    return rows.length;
  });
}

/** The tree as a reader of the admission summaries, for retention's check that every reader has passed a day. */
export const MERKLE_TREE_READER = { name: 'ledger-merkle-tree', eventTypes: ['AdmissionsRecorded', 'UnresolvedAdmissionsRecorded'] } as const;
