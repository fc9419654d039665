// What the backlog tells a caller, decided alike on the database path and the stream path: whether a
// commandId sent again is the same command, what a settlement attempt answers, and the answer for a tenant
// that does not exist.
import { createHash } from 'node:crypto';
import type { AcceptedCommandStatus, CommandIdConflict, CommandAccepted, CommandSettledBefore, SettleOutcome, CommandRejected } from './types.ts';

// What makes two enqueues of one commandId "the same command": the device and the payload. A commandId is an
// idempotency key (as payment APIs treat theirs): sent again with the same content it is answered as the
// first time; sent with other content it is a CommandIdConflict, never silently answered "accepted" while the
// other content is dropped. The fingerprint is a SHA-256 of the device id and the payload in canonical form
// (object keys sorted), so {"a":1,"b":2} and {"b":2,"a":1} are the same payload, as jsonb stores them.
export function commandFingerprint(deviceId: string, payload: unknown): string {
  return createHash('sha256').update(canonicalJson([deviceId, payload])).digest('base64url');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

// A commandId that was accepted before, sent again: the same content is the same command (answered as it
// was first accepted while it is queued, and with how it left once it has left); other content is a
// conflict. The database path and the stream path decide it alike.
export interface EarlierCommand {
  status: AcceptedCommandStatus;
  /** null for a command accepted before fingerprints were kept: then only the device is compared. */
  fingerprint: string | null;
  /** null when not known either (a stream snapshot older than fingerprints): then the repeat counts as the same. */
  deviceId: string | null;
  undeliveredAtEnqueue: number;
  ceilingAtEnqueue: number;
}

export type RepeatDecision =
  | { kind: 'duplicate'; undelivered: number; ceiling: number }
  | { kind: 'conflict' }
  | { kind: 'settled-before'; settledAs: Exclude<AcceptedCommandStatus, 'queued'> };

export function decideRepeat(earlier: EarlierCommand, sent: { deviceId: string; fingerprint: string }): RepeatDecision {
  const same = earlier.fingerprint !== null ? earlier.fingerprint === sent.fingerprint : earlier.deviceId === null || earlier.deviceId === sent.deviceId;
  if (!same) return { kind: 'conflict' };
  if (earlier.status !== 'queued') return { kind: 'settled-before', settledAs: earlier.status };
  return { kind: 'duplicate', undelivered: earlier.undeliveredAtEnqueue, ceiling: earlier.ceilingAtEnqueue };
}

export function repeatOutcome(commandId: string, decision: RepeatDecision): CommandAccepted | CommandIdConflict | CommandSettledBefore {
  switch (decision.kind) {
    case 'duplicate':
      // Counted once: the first acceptance is answered again and nothing new is recorded.
      return { status: 'accepted', commandId, undelivered: decision.undelivered, ceiling: decision.ceiling };
    case 'conflict':
      return { status: 'conflict', commandId, message: conflictMessage(commandId) };
    case 'settled-before':
      return { status: 'settled-before', commandId, settledAs: decision.settledAs, message: `command ${commandId} was accepted before and already left the backlog (${decision.settledAs})` };
  }
}

export function conflictMessage(commandId: string): string {
  return `commandId ${commandId} was already used for another command (other device or payload); use a new commandId`;
}

export type SettleDecision = { kind: 'settled'; undelivered: number } | { kind: 'unknown' } | { kind: 'already-settled'; settledAs: string };

/** What a caller is told about a settlement attempt. */
export function settleOutcome(commandId: string, decision: SettleDecision): SettleOutcome {
  switch (decision.kind) {
    case 'settled':
      return { status: 'settled', commandId, undelivered: decision.undelivered };
    case 'unknown':
      return { status: 'failed', error: { kind: 'UnknownCommand', commandId, message: `no command ${commandId} was accepted for this tenant` } };
    case 'already-settled':
      return {
        status: 'failed',
        error: {
          kind: 'CommandAlreadySettled',
          commandId,
          settledAs: decision.settledAs,
          message: `command ${commandId} already left the backlog (${decision.settledAs})`,
        },
      };
  }
}

/** The answer to an enqueue for a tenant that does not exist: not retryable, no ceiling, nothing recorded. */
export function unknownTenant(commandId: string): CommandRejected {
  return { status: 'rejected', commandId, reason: 'UNKNOWN_TENANT', retryable: false, retryAfterSeconds: null, undelivered: 0, ceiling: null };
}
