// A commandId that was accepted before, sent again: the same content is the same command (answered as it
// was first accepted while it is queued, and with how it left once it has left); other content is a
// conflict. The database path and the stream path decide it alike.
import type { AcceptedCommandStatus, CommandIdConflict, CommandAccepted, CommandSettledBefore } from './types.ts';

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
