import type { Queryable } from '../../db/db.ts';
import type { Checkpoint } from '../eventStore.ts';

/**
 * True when events after `after` have committed but readAll still holds them back, because an older
 * transaction is open. Their NOTIFY has already come and gone, and the open transaction may never append
 * (so never notify), so a subscriber has to poll until the snapshot's xmin passes them.
 */
export async function hasHeldBackEvents(db: Queryable, after: Checkpoint): Promise<boolean> {
  const [commit, prepare] = after === 'start' ? ['0', '0'] : [after.commit.toString(), after.prepare.toString()];
  const { rows } = await db.query<{ held_back: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM gl_events
       WHERE (tx_id, global_position) > ($1::xid8, $2::bigint)
         AND tx_id >= pg_snapshot_xmin(pg_current_snapshot())
     ) AS held_back`,
    [commit, prepare],
  );
  return rows[0]!.held_back;
}
