// Events of the undelivered-command ceiling (src/command-backlog). Each tenant's commands go to one stream,
// `commands-<tenantId>`: its events, in order, fold to the tenant's backlog (the EventStoreDB path appends
// to it with an expected revision; projections/commandBacklog.ts folds the same events into a read model).
import type { LimitSourceLevel } from '../../governance/index.ts';

export const COMMANDS_STREAM_PREFIX = 'commands-';

export function commandsStream(tenantId: string): string {
  return `${COMMANDS_STREAM_PREFIX}${tenantId}`;
}

export type CommandRejectionReason = 'CEILING_REACHED' | 'UNKNOWN_TENANT';

/** Why a command left the backlog without being delivered, or that it was. */
export type CommandSettlement = 'delivered' | 'failed' | 'cancelled' | 'expired';

/** Accepted into the backlog: `undelivered` counts this command. */
export interface CommandEnqueuedData {
  tenantId: string;
  commandId: string;
  deviceId: string;
  payload: unknown;
  undelivered: number;
  ceiling: number;
  ceilingSource: LimitSourceLevel;
}

/** Refused: nothing was queued. An UNKNOWN_TENANT rejection has no ceiling. */
export interface CommandRejectedData {
  tenantId: string;
  commandId: string;
  deviceId: string;
  reason: CommandRejectionReason;
  retryable: boolean;
  retryAfterSeconds: number | null;
  undelivered: number;
  ceiling: number | null;
}

/** Out of the backlog; `undelivered` is the backlog after this command left it. */
export interface CommandSettledData {
  tenantId: string;
  commandId: string;
  undelivered: number;
}

export interface CommandFailedData extends CommandSettledData {
  /** What command-delivery reported, if anything. */
  error: string | null;
}

export interface CommandExpiredData extends CommandSettledData {
  enqueuedAt: string;
  ttlMs: number;
}

export type CommandEventMap = {
  CommandEnqueued: CommandEnqueuedData;
  CommandRejected: CommandRejectedData;
  CommandDelivered: CommandSettledData;
  CommandFailed: CommandFailedData;
  CommandCancelled: CommandSettledData;
  CommandExpired: CommandExpiredData;
};

export type CommandEventType = keyof CommandEventMap;

/** The events that take a command out of the backlog, by the settlement each records. */
export const SETTLEMENT_EVENT_TYPES = {
  delivered: 'CommandDelivered',
  failed: 'CommandFailed',
  cancelled: 'CommandCancelled',
  expired: 'CommandExpired',
} as const satisfies Record<CommandSettlement, CommandEventType>;

export const COMMAND_EVENT_TYPES: readonly CommandEventType[] = [
  'CommandEnqueued',
  'CommandRejected',
  ...Object.values(SETTLEMENT_EVENT_TYPES),
];
