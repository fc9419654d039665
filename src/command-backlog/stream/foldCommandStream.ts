// A tenant's backlog as its commands stream tells it: the state the stream-revision path decides on.
// Pure: the same events always fold to the same state.
import type { RecordedEvent, CommandEventMap, CommandEventType } from '../../ledger/index.ts';
import { nextDeliveryIntervalEwma, type DeliveryPace } from '../retryAfter.ts';
import { commandFingerprint } from '../answers.ts';
import type { EarlierCommand } from '../answers.ts';

export interface AcceptedCommand extends EarlierCommand {
  enqueuedAt: Date;
}

export interface TenantCommandsState extends DeliveryPace {
  /** The last revision folded; 'no_stream' before the first event. */
  revision: bigint | 'no_stream';
  undelivered: number;
  /** Every command ever accepted for the tenant (idempotency); refused ones are not kept. */
  commands: Map<string, AcceptedCommand>;
}

export function emptyCommandsState(): TenantCommandsState {
  return { revision: 'no_stream', undelivered: 0, commands: new Map(), lastDeliveredAt: null, deliveryIntervalMsEwma: null };
}

const SETTLED_AS = {
  CommandDelivered: 'delivered',
  CommandFailed: 'failed',
  CommandCancelled: 'cancelled',
  CommandExpired: 'expired',
} as const;

/** Folds one event into `state` (mutating it: the state is private to one tenant's cache entry). */
export function foldCommandEvent(state: TenantCommandsState, event: RecordedEvent): TenantCommandsState {
  state.revision = event.revision;
  const at = new Date(typeof event.metadata.occurredAt === 'string' ? event.metadata.occurredAt : event.recordedAt);
  const type = event.type as CommandEventType;
  if (type === 'CommandEnqueued') {
    const data = event.data as CommandEventMap['CommandEnqueued'];
    state.undelivered++;
    state.commands.set(data.commandId, {
      status: 'queued',
      enqueuedAt: at,
      undeliveredAtEnqueue: data.undelivered,
      ceilingAtEnqueue: data.ceiling,
      deviceId: data.deviceId,
      fingerprint: commandFingerprint(data.deviceId, data.payload),
    });
  } else if (type in SETTLED_AS) {
    const command = state.commands.get((event.data as { commandId: string }).commandId);
    if (command?.status === 'queued') {
      command.status = SETTLED_AS[type as keyof typeof SETTLED_AS];
      state.undelivered--;
      if (type === 'CommandDelivered' || type === 'CommandFailed') recordDelivery(state, at);
    }
  }
  return state;
}

// The same pace the database path keeps on its guard row (settleQueuedCommand.ts).
function recordDelivery(state: TenantCommandsState, at: Date): void {
  if (state.lastDeliveredAt !== null) {
    const intervalMs = Math.max(0, at.getTime() - state.lastDeliveredAt.getTime());
    state.deliveryIntervalMsEwma = nextDeliveryIntervalEwma(state.deliveryIntervalMsEwma, intervalMs);
  }
  state.lastDeliveredAt = state.lastDeliveredAt === null || at > state.lastDeliveredAt ? at : state.lastDeliveredAt;
}
