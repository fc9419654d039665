import type { Db, Tx } from '../db/db.ts';

const UNIQUE_VIOLATION = '23505';
const DEADLOCK_DETECTED = '40P01';
const MAX_ATTEMPTS = 8;

/**
 * Runs `work` in a transaction and runs it again, from the start, when PostgreSQL refuses it for a reason
 * a fresh attempt resolves: a unique violation (a concurrent enqueue of the same commandId won; the retry
 * finds it and answers as a duplicate) or a deadlock (two expiry passes locking tenants in different order).
 */
export async function retryTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(work);
    } catch (error) {
      const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
      if (attempt >= MAX_ATTEMPTS || (code !== UNIQUE_VIOLATION && code !== DEADLOCK_DETECTED)) throw error;
    }
  }
}
