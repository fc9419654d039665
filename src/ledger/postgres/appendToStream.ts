import type { Db } from '../../db/db.ts';
import type { AppendResult, NewEvent } from '../eventStore.ts';
import { appendInTransaction, type AppendOptions } from './appendInTransaction.ts';

const UNIQUE_VIOLATION = '23505';
const MAX_ATTEMPTS = 5;

/**
 * Appends a batch in its own transaction. A unique violation means another transaction stored one of our
 * event ids (or, from a writer that bypassed the stream lock, one of our revisions) while we waited; the
 * retry re-reads the stream, so it then finds the id stored (idempotent no-op) or the revision taken
 * (WrongExpectedRevision when an expected revision was given, the next free revision with 'any').
 */
export async function appendToStream(
  db: Db,
  stream: string,
  events: readonly NewEvent[],
  options: AppendOptions = {},
): Promise<AppendResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction((tx) => appendInTransaction(tx, stream, events, options));
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isUniqueViolation(error)) throw error;
    }
  }
}

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === UNIQUE_VIOLATION;
}
