// The window a time a client sends (a message's send time, an admission's `at`, a lease summary's seconds)
// must lie in before anything is metered or recorded at it. Every door that takes a client's time holds it
// to this window; what lies outside is metered at arrival (a broker message, which cannot be answered) or
// refused (an API call, which can).
//
// - Back: 7 days, what the trend projection keeps of its minutes by default
//   (GOVERNANCE_TREND_MINUTES_RETENTION_DAYS): an older instant would land where nobody looks, and a summary
//   dated decades back (`sent-at: 1`) is what once made one summary span 56 years.
// - Ahead: 60 s, for clocks that drift; an instant further ahead would fill a token bucket early and starve
//   the live traffic that follows it.

export const SEND_TIME_MAX_AGE_MS = 7 * 24 * 3600_000;
export const SEND_TIME_MAX_AHEAD_MS = 60_000;

/** Why a client's time was not taken: older than SEND_TIME_MAX_AGE_MS, or more than SEND_TIME_MAX_AHEAD_MS ahead. */
export type SendTimeOutOfWindow = 'too-old' | 'future';

/** Whether `sentAtMs` lies outside the window around `nowMs`, and on which side; null when inside. */
export function sendTimeOutOfWindow(sentAtMs: number, nowMs: number): SendTimeOutOfWindow | null {
  if (sentAtMs < nowMs - SEND_TIME_MAX_AGE_MS) return 'too-old';
  if (sentAtMs > nowMs + SEND_TIME_MAX_AHEAD_MS) return 'future';
  return null;
}
