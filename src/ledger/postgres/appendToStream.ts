import { sqlStateOf, UNIQUE_VIOLATION, type Db } from '../../db/db.ts';
import { ReferenceOutsideDay, WrongExpectedRevision, type AppendResult, type NewEvent } from '../eventStore.ts';
import { appendBatch, appendLockedAlone } from './appendBatch.ts';
import { appendLocked, expectedRevisionOf, type AppendOptions } from './appendInTransaction.ts';
import { prepareBatch } from './prepareBatch.ts';
import { isTimePartitioned } from './summaryPartitions.ts';

/** A summary reference recorded outside its source's day (migrations/0250_ledger_summary_refs_same_day.sql). */
const REFERENCE_OUTSIDE_DAY = 'GL001';
const MAX_LOCKED_ATTEMPTS = 10;

/**
 * Appends a batch in its own transaction.
 *
 * The first attempt is the append statement alone, without the stream lock and without looking for
 * already-stored ids: one round trip, which is most of the cost of a small append. If another writer took
 * the same revision meanwhile, or one of our ids is already stored, UNIQUE turns that into a unique
 * violation and nothing of ours is stored; we then queue on the stream lock, where writers of one stream
 * take turns instead of colliding again, and look the ids up. A failed expected-revision check is also
 * retried that way, since the batch may be an idempotent retry. Every retry re-reads the
 * stream, so it finds the id stored (idempotent no-op), the revision taken (WrongExpectedRevision when an
 * expected revision was given) or the next free revision ('any'). A locked attempt can still lose to a
 * newcomer's unlocked first attempt, hence the bound.
 *
 * A time-partitioned stream (the admission summaries, migration 0100) always takes the locked path: its
 * day partitions cannot hold UNIQUE (stream, revision) or UNIQUE (event_id) across days, so two writers
 * racing at midnight would not collide on an index; the lock numbers its revisions and the look-up finds
 * its stored ids instead. It takes it in one statement (appendLockedAlone: the Recorder appends every second,
 * and four round trips each waited for a turn of a busy event loop). A summary reference the database refuses
 * for being outside its source's day fails as ReferenceOutsideDay, with nothing stored.
 */
export async function appendToStream(
  db: Db,
  stream: string,
  events: readonly NewEvent[],
  options: AppendOptions = {},
): Promise<AppendResult> {
  const batch = prepareBatch(stream, events);
  const expected = expectedRevisionOf(stream, options);
  if (!isTimePartitioned(stream)) {
    try {
      return await appendBatch(db, stream, batch, expected, false);
    } catch (error) {
      // WrongExpectedRevision too: a retried batch whose ids are all stored is a success, which only the
      // look-up can tell.
      if (!isUniqueViolation(error) && !(error instanceof WrongExpectedRevision)) throw error;
    }
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return isTimePartitioned(stream)
        ? await appendLockedAlone(db, stream, batch, expected)
        : (await db.transaction((tx) => appendLocked(tx, [{ stream, batch, expected }])))[0]!;
    } catch (error) {
      if (sqlStateOf(error) === REFERENCE_OUTSIDE_DAY) throw new ReferenceOutsideDay(stream, error);
      if (attempt >= MAX_LOCKED_ATTEMPTS || !isUniqueViolation(error)) throw error;
    }
  }
}

function isUniqueViolation(error: unknown): boolean {
  return sqlStateOf(error) === UNIQUE_VIOLATION;
}
