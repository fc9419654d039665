import type { Queryable } from '../../db/db.ts';
import type { Checkpoint } from '../eventStore.ts';

/**
 * True when committed events (of `types`, if given) exist after `after`. A subscriber asks this after a
 * short readAll page: such events are either held back behind an older open transaction, whose end sends
 * no NOTIFY if it appended nothing, or became readable since that page, so it must read again soon
 * rather than sleep until the next NOTIFY.
 *
 * It deliberately does not ask "held back right now": that would be a second snapshot, and an older
 * transaction that ends between the page and this check would make the answer "no" while the events it
 * held back are readable and unread; the subscriber would then sleep on them for a whole poll interval.
 */
export async function hasUnreadEvents(db: Queryable, after: Checkpoint, types?: readonly string[]): Promise<boolean> {
  const [commit, prepare] = after === 'start' ? ['0', '0'] : [after.commit.toString(), after.prepare.toString()];
  const { rows } = await db.query<{ unread: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM gl_events
       WHERE (tx_id, global_position) > ($1::xid8, $2::bigint)
         AND ($3::text[] IS NULL OR type = ANY($3::text[]))
     ) AS unread`,
    [commit, prepare, types ? [...types] : null],
  );
  return rows[0]!.unread;
}
