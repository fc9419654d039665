import type { Tx } from '../../db/db.ts';
import { InvalidAppend, type AppendResult, type ExpectedRevision, type NewEvent } from '../eventStore.ts';
import { appendBatch } from './appendBatch.ts';
import { prepareBatch, type PreparedBatch } from './prepareBatch.ts';

// Any constant: it keeps the ledger's per-stream advisory locks apart from other advisory locks.
const STREAM_LOCK_CLASS = 7_246_002;

export interface AppendOptions {
  expectedRevision?: ExpectedRevision;
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
  options: AppendOptions = {},
): Promise<AppendResult> {
  return appendLocked(tx, stream, prepareBatch(stream, events), expectedRevisionOf(stream, options));
}

export async function appendLocked(tx: Tx, stream: string, batch: PreparedBatch, expected: ExpectedRevision): Promise<AppendResult> {
  await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [STREAM_LOCK_CLASS, stream]);
  return appendBatch(tx, stream, batch, expected);
}

export function expectedRevisionOf(stream: string, options: AppendOptions): ExpectedRevision {
  const expected = options.expectedRevision ?? 'any';
  if (typeof expected === 'bigint' && expected < 0n) throw new InvalidAppend(stream, `expected revision ${expected} is negative`);
  return expected;
}
