import type { Queryable } from '../../db/db.ts';
import type { ReadStreamOptions, RecordedEvent } from '../eventStore.ts';
import { EVENT_COLUMNS, toRecordedEvent, type EventRow } from './eventRow.ts';

/**
 * Events of one stream in revision order. Forwards starts at `fromRevision` (default the start), backwards
 * at `fromRevision` (default the end), both inclusive; an absent stream reads as empty. Revisions within a
 * stream are assigned under the stream's lock, so committed revisions have no gaps and need no snapshot
 * filtering.
 */
export async function readStream(db: Queryable, stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
  const direction = options.direction ?? 'forwards';
  const from = options.fromRevision ?? (direction === 'forwards' ? 'start' : 'end');
  const maxCount = options.maxCount ?? null;
  if (maxCount !== null && (!Number.isInteger(maxCount) || maxCount < 0)) {
    throw new RangeError(`maxCount must be a whole number >= 0, got ${maxCount}`);
  }
  // Forwards from the end, or backwards from the start, is past the last event by definition.
  if ((direction === 'forwards' && from === 'end') || (direction === 'backwards' && from === 'start')) return [];
  const bound = typeof from === 'bigint' ? from.toString() : null;
  const sql =
    direction === 'forwards'
      ? `SELECT ${EVENT_COLUMNS} FROM gl_events WHERE stream = $1 AND ($2::bigint IS NULL OR revision >= $2::bigint)
         ORDER BY revision LIMIT $3`
      : `SELECT ${EVENT_COLUMNS} FROM gl_events WHERE stream = $1 AND ($2::bigint IS NULL OR revision <= $2::bigint)
         ORDER BY revision DESC LIMIT $3`;
  const { rows } = await db.query<EventRow>(sql, [stream, bound, maxCount]);
  return rows.map(toRecordedEvent);
}
