import type { Tx } from '../../db/db.ts';
import { prepared } from '../../db/preparedStatements.ts';
import { InvalidAppend, type AppendResult, type ExpectedRevision, type NewEvent } from '../eventStore.ts';
import { appendBatches, type PreparedAppend } from './appendBatch.ts';
import { prepareBatch } from './prepareBatch.ts';

// Any constant: it keeps the ledger's per-stream advisory locks apart from other advisory locks.
export const STREAM_LOCK_CLASS = 7_246_002;

const LOCK_STREAM_SQL = prepared('SELECT pg_advisory_xact_lock($1, hashtext($2))');

// The streams' locks in one statement, in ascending lock key order whatever the order of the call: two
// transactions that take their streams this way cannot deadlock on them. The order is that of the keys
// (hashtext of the name), not of the names: two names can share a key, and an order of names could then
// take the same keys in different orders. The sorted subquery is not flattened (it has ORDER BY) and the
// volatile lock function is not pushed into it, so the locks are taken row by row in its order.
const LOCK_STREAMS_SQL = prepared(`
SELECT pg_advisory_xact_lock($1, k.key)
FROM (SELECT DISTINCT hashtext(s.stream) AS key FROM unnest($2::text[]) AS s(stream) ORDER BY key) AS k`);

export interface AppendOptions {
  expectedRevision?: ExpectedRevision;
}

export interface InTransactionOptions {
  /**
   * The caller's transaction already holds, from an earlier statement, a row lock that every writer of
   * these streams takes before appending to them (the command backlog's guard row of the stream's tenant):
   * writers of the streams already take turns, and the append statement, which starts after that lock was
   * granted, sees every append committed before. The streams' own locks would then cost a statement and
   * add nothing, so they are not taken. A writer that does not take the caller's lock cannot corrupt a
   * stream either way: UNIQUE (stream, revision) fails one of two racing appends with 23505.
   */
  lockedByCaller?: boolean;
}

/** One stream's part of appendStreamsInTransaction. */
export interface StreamAppend extends AppendOptions {
  stream: string;
  events: readonly NewEvent[];
}

/**
 * Appends a batch inside the caller's transaction, so a caller can change its own rows and record the
 * event atomically (commit both or neither). Events whose id is already stored are not stored again; a
 * batch made only of stored ids is a no-op that succeeds whatever the expected revision (an idempotent
 * retry) and returns the stored copy of the batch's last event. Otherwise the result names the last event
 * this call stored.
 *
 * Appends to one stream queue on a per-stream advisory lock held to the end of the transaction; the lock
 * is taken in its own statement so the append statement's snapshot, taken after it, sees every append
 * committed before. Keep the transaction short: it holds the stream, and readAll holds back every event
 * committed after it began until it ends. Throws InvalidAppend, and WrongExpectedRevision (nothing stored;
 * the caller's transaction is still usable). A concurrent append of the same event id elsewhere surfaces as
 * PostgreSQL's unique violation (code 23505): retry the whole transaction then.
 */
export async function appendInTransaction(
  tx: Tx,
  stream: string,
  events: readonly NewEvent[],
  options: AppendOptions & InTransactionOptions = {},
): Promise<AppendResult> {
  const append = [prepareAppend({ stream, events, ...options })];
  const [result] = options.lockedByCaller ? await appendBatches(tx, append) : await appendLocked(tx, append);
  return result!;
}

/**
 * appendInTransaction for several streams at once, in two statements whatever their number: one takes
 * every stream's lock (in lock key order, see LOCK_STREAMS_SQL), one appends every stream's events (only
 * the append when `lockedByCaller`). Each
 * stream gets exactly what appendInTransaction would give it (revisions from its head, its own expected
 * revision, idempotent ids), and one AppendResult, in the order of `appends`; the events are stored, and
 * read by readAll, in the order of `appends` and of each batch. All or nothing: if any stream's expected
 * revision does not hold, WrongExpectedRevision names the first such stream and nothing is stored for
 * any of them. A stream may appear once per call and an event id once per call (InvalidAppend otherwise).
 *
 * Deadlocks: transactions that each take all their streams in one call (appendInTransaction takes one)
 * cannot deadlock on stream locks; appending again to a stream already held takes no new lock. A
 * transaction that holds some streams and then, in another call, takes others can (PostgreSQL then
 * aborts one with 40P01), as with several appendInTransaction calls.
 */
export async function appendStreamsInTransaction(
  tx: Tx,
  appends: readonly StreamAppend[],
  { lockedByCaller = false }: InTransactionOptions = {},
): Promise<AppendResult[]> {
  const batches = appends.map(prepareAppend);
  const streams = new Set<string>();
  const ids = new Map<string, string>();
  for (const { stream, batch } of batches) {
    if (streams.has(stream)) throw new InvalidAppend(stream, 'the stream appears twice in one call');
    streams.add(stream);
    batch.ids.forEach((id, index) => {
      const other = ids.get(id);
      if (other !== undefined) throw new InvalidAppend(stream, `event ${index}: id ${id} is also in stream ${other} of the same call`);
      ids.set(id, stream);
    });
  }
  if (batches.length === 0) return [];
  return lockedByCaller ? appendBatches(tx, batches) : appendLocked(tx, batches);
}

/**
 * Takes the streams' locks, then appends: the append's snapshot is taken after every lock is held. One
 * stream (nearly every append) takes its lock with the simplest statement: planning is most of the cost
 * of a small append.
 */
export async function appendLocked(tx: Tx, appends: readonly PreparedAppend[]): Promise<AppendResult[]> {
  if (appends.length === 1) await tx.query(LOCK_STREAM_SQL, [STREAM_LOCK_CLASS, appends[0]!.stream]);
  else await tx.query(LOCK_STREAMS_SQL, [STREAM_LOCK_CLASS, appends.map((each) => each.stream)]);
  return appendBatches(tx, appends);
}

function prepareAppend({ stream, events, expectedRevision }: StreamAppend): PreparedAppend {
  return { stream, batch: prepareBatch(stream, events), expected: expectedRevisionOf(stream, { expectedRevision }) };
}

export function expectedRevisionOf(stream: string, options: AppendOptions): ExpectedRevision {
  const expected = options.expectedRevision ?? 'any';
  if (typeof expected === 'bigint' && expected < 0n) throw new InvalidAppend(stream, `expected revision ${expected} is negative`);
  return expected;
}
