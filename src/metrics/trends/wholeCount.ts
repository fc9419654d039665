/**
 * Counts in the ledger are whole and non-negative (the recorders only ever add whole units). A projection
 * must still never stop on one malformed number, which would stall every read model behind it, so it
 * reads anything else as the nearest sane whole number: negative, NaN or missing as 0.
 */
export function wholeCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}
