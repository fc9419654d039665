// Builds the ledger events of the command backlog, so both ledgers (PostgreSQL in-transaction, EventStoreDB
// streams) record exactly the same facts.
import type { EventMetadata, NewEvent, CommandEventMap, CommandEventType } from '../ledger/index.ts';
import type { BacklogActor } from './types.ts';

export type CommandEvent = { [Type in CommandEventType]: NewEvent<Type, CommandEventMap[Type]> }[CommandEventType];

export function commandEvent<Type extends CommandEventType>(
  type: Type,
  data: CommandEventMap[Type],
  actor: BacklogActor,
  occurredAt: Date,
  reason?: string,
): NewEvent<Type, CommandEventMap[Type]> {
  const metadata: EventMetadata = { actor: actor.id, occurredAt: occurredAt.toISOString() };
  if (actor.role !== undefined) metadata.actorRole = actor.role;
  if (reason !== undefined) metadata.reason = reason;
  return { type, data, metadata };
}

/** Expiry is the service's own doing, not a caller's: its events name this actor. */
export const EXPIRY_ACTOR: BacklogActor = { id: 'system:command-expiry' };
