// How much one read of whole events may hold. Admission summaries are up to MAX_APPEND_BYTES (512 KiB) of JSON
// each: a page of thousands of them is gigabytes, parsed at once, and one statement that outlasts the pool's
// 30 s query timeout (QUERY_TIMEOUT_MS). A reader that pages through events (the Merkle tree follower, the
// ledger export and its database verify, a day's archive) first reads the next events' stored sizes, then
// reads as many whole events as fit this budget.

/** Stored (compressed) bytes of event data and metadata per page at most; a page holds one event at least. */
export const MAX_READ_PAGE_STORED_BYTES = 4 * 1024 * 1024;

/** The stored size of an event row `g`, as the sizes read selects it. */
export const STORED_BYTES_SQL = 'pg_column_size(g.data) + pg_column_size(g.metadata)';

/** How many of the events of these stored sizes, in order, fit one page (one at least). */
export function countWithinPageBudget(storedBytes: readonly number[]): number {
  let total = 0;
  for (let i = 0; i < storedBytes.length; i++) {
    total += storedBytes[i]!;
    if (total > MAX_READ_PAGE_STORED_BYTES) return Math.max(1, i);
  }
  return storedBytes.length;
}
