import type { Queryable } from '../../db/db.ts';
import type { Position } from '../eventStore.ts';

/**
 * The greatest (tx_id, global_position) among committed events. Not limited to below the snapshot's xmin
 * like readAll: a transaction still open has no rows here yet, and anything committed later that sorts
 * before this head (an older transaction) is read before the head is, so a reader that reaches the head
 * has seen every event committed before this call.
 */
export async function readHeadPosition(db: Queryable): Promise<Position | undefined> {
  const { rows } = await db.query<{ tx_id: bigint; global_position: bigint }>(
    'SELECT tx_id, global_position FROM gl_events ORDER BY tx_id DESC, global_position DESC LIMIT 1',
  );
  const head = rows[0];
  return head ? { commit: head.tx_id, prepare: head.global_position } : undefined;
}
