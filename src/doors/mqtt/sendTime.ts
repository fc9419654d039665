// When a message was sent, and so which allowance pays for it. A message older than the backlog threshold
// (GOVERNANCE_BACKLOG_AFTER_SECONDS, default 5) was stored by the broker while the service was down or
// behind: it is charged on BACKLOG at its send time, so a drain is metered as it happened and does not spend
// what live traffic needs. Anything younger, undated or dated in the future (a device clock running ahead)
// is LIVE, charged at arrival.
//
// A send time outside the pipeline's window (sendTimeWindow.ts: older than 7 days, or more than 60 s ahead) is
// not believed: the message is LIVE at arrival, and `outOfWindow` says why, so the door counts it
// (door_send_times_out_of_window_total). A device cannot date its charges decades back or ahead.
//
// The send time is the MQTT 5 user property `sent-at` (Unix milliseconds or an ISO 8601 instant), read
// before the body is decoded; without it, the latest `at` of the decoded readings (a device sends after
// its newest reading).

import { sendTimeOutOfWindow, type SendTimeOutOfWindow } from '../pipeline/index.ts';

export const SENT_AT_PROPERTY = 'sent-at';

export interface Metering {
  allowance: 'LIVE' | 'BACKLOG';
  /** Unix ms the charge is metered at. */
  atMs: number;
  /** Set when the send time lay outside the window and was replaced by the arrival time. */
  outOfWindow?: SendTimeOutOfWindow;
}

export function meteringFor(sentAtMs: number | undefined, arrivedAtMs: number, backlogAfterMs: number): Metering {
  if (sentAtMs === undefined) return { allowance: 'LIVE', atMs: arrivedAtMs };
  const outOfWindow = sendTimeOutOfWindow(sentAtMs, arrivedAtMs);
  if (outOfWindow !== null) return { allowance: 'LIVE', atMs: arrivedAtMs, outOfWindow };
  if (sentAtMs <= arrivedAtMs - backlogAfterMs) return { allowance: 'BACKLOG', atMs: sentAtMs };
  return { allowance: 'LIVE', atMs: arrivedAtMs };
}

/** The `sent-at` user property as Unix ms, or undefined when absent or not a time. */
export function sentAtOf(userProperties: Record<string, string | string[]> | undefined): number | undefined {
  const raw = userProperties?.[SENT_AT_PROPERTY];
  const text = Array.isArray(raw) ? raw[0] : raw;
  return text === undefined ? undefined : parseInstant(text);
}

/** The latest `at` among decoded entries, or undefined when none carries a valid one. */
export function latestReadingTime(entries: readonly Record<string, unknown>[]): number | undefined {
  let latest: number | undefined;
  for (const entry of entries) {
    const at = entry.at;
    const ms = typeof at === 'string' ? parseInstant(at) : typeof at === 'number' ? finiteMs(at) : undefined;
    if (ms !== undefined && (latest === undefined || ms > latest)) latest = ms;
  }
  return latest;
}

function parseInstant(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d{1,15}$/.test(trimmed)) return finiteMs(Number(trimmed));
  // Date.parse accepts many shapes; only a dated instant with a time is taken as a send time.
  if (!/^\d{4}-\d{2}-\d{2}T/.test(trimmed)) return undefined;
  return finiteMs(Date.parse(trimmed));
}

function finiteMs(ms: number): number | undefined {
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}
