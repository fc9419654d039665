// Naming events for proofs: the event at a ledger position (what a read model row keeps), and the leaf of an
// event in the Merkle tree. One query for many: the API asks for a page's worth at once.
import type { Queryable } from '../../db/db.ts';
import { parsePosition } from '../eventStore.ts';

/** The ids of the events at these positions (`commit:prepare`), by position; a position with no event is absent. */
export async function eventIdsAtPositions(db: Queryable, positions: readonly string[]): Promise<Map<string, string>> {
  const parsed = positions.flatMap((text) => {
    const position = parsePosition(text);
    return position ? [{ text, commit: String(position.commit), prepare: String(position.prepare) }] : [];
  });
  if (parsed.length === 0) return new Map();
  // On EventStoreDB the events are not in this database: the tree kept through the port (portTree.ts) knows
  // which event is at a position it has reached.
  const { rows } = await db.query<{ tx_id: string; global_position: string; event_id: string }>(
    `SELECT p.t AS tx_id, p.g::text AS global_position, coalesce(g.event_id, l.event_id)::text AS event_id
       FROM unnest($1::text[], $2::bigint[]) AS p(t, g)
       LEFT JOIN gl_events g ON g.tx_id = p.t::xid8 AND g.global_position = p.g
       LEFT JOIN gl_merkle_leaves l ON l.recorded_at IS NOT NULL AND l.tx_id = p.t::xid8 AND l.global_position = p.g
      WHERE g.event_id IS NOT NULL OR l.event_id IS NOT NULL`,
    [parsed.map((each) => each.commit), parsed.map((each) => each.prepare)],
  );
  return new Map(rows.map((row) => [`${row.tx_id}:${row.global_position}`, row.event_id]));
}

/** The leaf index of each event that has one (the tree may not have reached the newest yet). */
export async function leafIndexesOf(db: Queryable, eventIds: readonly string[]): Promise<Map<string, number>> {
  if (eventIds.length === 0) return new Map();
  const { rows } = await db.query<{ event_id: string; leaf_index: string }>(
    'SELECT event_id::text, leaf_index::text FROM gl_merkle_leaves WHERE event_id = ANY($1::uuid[])',
    [eventIds],
  );
  return new Map(rows.map((row) => [row.event_id, Number(row.leaf_index)]));
}
