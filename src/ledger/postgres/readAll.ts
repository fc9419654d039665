import type { Queryable } from '../../db/db.ts';
import type { Checkpoint, RecordedEvent } from '../eventStore.ts';
import { EVENT_COLUMNS, toRecordedEvent, type EventRow } from './eventRow.ts';

/**
 * Up to maxCount events after `after` in the global order (tx_id, global_position), optionally only of
 * some types.
 *
 * Why not simply ORDER BY global_position: the bigserial is drawn when a row is inserted, not when its
 * transaction commits. Transaction A draws 10, B draws 11, B commits first; a reader that then reads 11
 * and checkpoints there never sees 10 when A commits: the event is skipped forever (the sequence-gap
 * problem). So we order by the appending transaction's id first, and return only rows whose transaction
 * id is below the snapshot's xmin: every transaction below xmin has finished, and any transaction that
 * commits later has an id >= xmin, so it can only add rows after everything returned here. A reader is
 * held back (never wrong) while an older transaction stays open.
 */
export async function readAll(
  db: Queryable,
  after: Checkpoint,
  maxCount: number,
  types?: readonly string[],
): Promise<RecordedEvent[]> {
  if (!Number.isInteger(maxCount) || maxCount < 0) throw new RangeError(`maxCount must be a whole number >= 0, got ${maxCount}`);
  const [commit, prepare] = after === 'start' ? ['0', '0'] : [after.commit.toString(), after.prepare.toString()];
  const { rows } = await db.query<EventRow>(
    `SELECT ${EVENT_COLUMNS} FROM gl_events
     WHERE (tx_id, global_position) > ($1::xid8, $2::bigint)
       AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
       AND ($4::text[] IS NULL OR type = ANY($4::text[]))
     ORDER BY tx_id, global_position
     LIMIT $3`,
    [commit, prepare, maxCount, types ? [...types] : null],
  );
  return rows.map(toRecordedEvent);
}
