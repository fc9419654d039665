// The command backlog when the ledger lives in PostgreSQL/PGlite: the guard count, the command rows and the
// ledger events are written in ONE transaction (appendInTransaction), so they commit together or not at all,
// and the ledger can never disagree with the count. The guard row is taken before the tenant's stream, in
// every transaction that takes both, so the stream's revision order is the order the count changed in.
import type { Db } from '../../db/db.ts';
import type { NewEvent } from '../../ledger/eventStore.ts';
import { appendInTransaction } from '../../ledger/postgres/appendInTransaction.ts';
import { commandsStream, SETTLEMENT_EVENT_TYPES } from '../../ledger/catalog/commands.ts';
import { commandEvent } from '../commandEvents.ts';
import { EXPIRY_ACTOR } from '../expiryActor.ts';
import { retryAfterSeconds } from '../retryAfter.ts';
import { retryTransaction } from '../retryTransaction.ts';
import type { BacklogOptions } from '../backlogOptions.ts';
import { settleOutcome } from '../settleOutcome.ts';
import { settlementMethods, type SettleCommand } from '../settlementMethods.ts';
import { validateEnqueue, type ValidCommand } from '../validateCommand.ts';
import { createKeyedBatcher } from '../keyedBatcher.ts';
import type { CommandActor, CommandBacklog, CommandRejected, EnqueueOutcome } from '../types.ts';
import { expireQueuedCommands } from './expireQueuedCommands.ts';
import { settleQueuedCommand } from './settleQueuedCommand.ts';
import { takeBacklogSlots } from './takeBacklogSlots.ts';

/** Commands expired per transaction: bounds how long one expiry pass holds guard rows. */
const EXPIRY_BATCH = 500;
/** Enqueues of one tenant decided in one transaction, at most. */
const MAX_ENQUEUE_BATCH = 100;

interface EnqueueCall {
  actor: CommandActor;
  command: ValidCommand;
}

export function createDatabaseCommandBacklog(db: Db, { ceilings, commandTtlMs, now }: BacklogOptions): CommandBacklog {
  const settle: SettleCommand = async (actor, ref, settlement, detail) => {
    const at = now();
    return retryTransaction(db, async (tx) => {
      const decision = await settleQueuedCommand(tx, ref, settlement, at);
      if (decision.kind === 'settled') {
        const data = { tenantId: ref.tenantId, commandId: ref.commandId, undelivered: decision.undelivered };
        const event =
          settlement === 'failed'
            ? commandEvent('CommandFailed', { ...data, error: detail.error ?? null }, actor, at)
            : commandEvent(SETTLEMENT_EVENT_TYPES[settlement], data, actor, at, detail.reason);
        await appendInTransaction(tx, commandsStream(ref.tenantId), [event]);
      }
      return settleOutcome(ref.commandId, decision);
    });
  };

  // One transaction per batch of a tenant's concurrent enqueues: the ceiling read, the slots, the command
  // rows and the ledger events of the whole batch commit together (or, on a fault, none of them).
  const enqueueBatch = async (tenantId: string, calls: EnqueueCall[]): Promise<EnqueueOutcome[]> => {
    const at = now();
    return retryTransaction(db, async (tx) => {
      const events: NewEvent[] = [];
      const refuse = (call: EnqueueCall, rejected: Omit<CommandRejected, 'status'>): EnqueueOutcome => {
        const data = { tenantId, deviceId: call.command.deviceId, ...rejected };
        events.push(commandEvent('CommandRejected', data, call.actor, at));
        return { status: 'rejected', ...rejected };
      };
      const limit = await ceilings(tx, tenantId);
      let outcomes: EnqueueOutcome[];
      if (!limit) {
        const unknownTenant = { reason: 'UNKNOWN_TENANT', retryable: false, retryAfterSeconds: null, undelivered: 0, ceiling: null } as const;
        outcomes = calls.map((call) => refuse(call, { commandId: call.command.commandId, ...unknownTenant }));
      } else {
        // The same commandId twice in one batch is decided once; the repeat gets the same answer.
        const distinct = new Map<string, ValidCommand>();
        for (const call of calls) if (!distinct.has(call.command.commandId)) distinct.set(call.command.commandId, call.command);
        const decisions = await takeBacklogSlots(tx, tenantId, [...distinct.values()], limit.ceiling, at);
        const decisionOf = new Map([...distinct.keys()].map((commandId, i) => [commandId, decisions[i]!]));
        const recorded = new Set<string>();
        outcomes = calls.map((call) => {
          const { commandId } = call.command;
          const decision = decisionOf.get(commandId)!;
          const first = !recorded.has(commandId);
          recorded.add(commandId);
          if (decision.kind === 'duplicate') {
            // Counted once: the first acceptance is answered again and nothing new is recorded.
            return { status: 'accepted', commandId, undelivered: decision.undelivered, ceiling: decision.ceiling };
          }
          if (decision.kind === 'taken') {
            if (first) {
              const data = { tenantId, commandId, deviceId: call.command.deviceId, payload: call.command.payload, undelivered: decision.undelivered, ceiling: limit.ceiling, ceilingSource: limit.source };
              events.push(commandEvent('CommandEnqueued', data, call.actor, at));
            }
            return { status: 'accepted', commandId, undelivered: decision.undelivered, ceiling: limit.ceiling };
          }
          return refuse(call, {
            commandId,
            reason: 'CEILING_REACHED',
            retryable: true,
            retryAfterSeconds: retryAfterSeconds(decision.pace, at),
            undelivered: decision.undelivered,
            ceiling: limit.ceiling,
          });
        });
      }
      if (events.length > 0) await appendInTransaction(tx, commandsStream(tenantId), events);
      return outcomes;
    });
  };
  const enqueueInBatch = createKeyedBatcher(enqueueBatch, MAX_ENQUEUE_BATCH);

  return {
    async enqueue(actor, input): Promise<EnqueueOutcome> {
      const command = validateEnqueue(input);
      if (command.status === 'invalid') return command;
      return enqueueInBatch(command.tenantId, { actor, command });
    },

    ...settlementMethods(settle),

    async expireOlderThanTtl() {
      let expired = 0;
      for (;;) {
        const at = now();
        const cutoff = new Date(at.getTime() - commandTtlMs);
        const batch = await retryTransaction(db, async (tx) => {
          const commands = await expireQueuedCommands(tx, cutoff, at, EXPIRY_BATCH);
          const byTenant = new Map<string, typeof commands>();
          for (const command of commands) byTenant.set(command.tenantId, [...(byTenant.get(command.tenantId) ?? []), command]);
          for (const [tenantId, tenantCommands] of byTenant) {
            const events = tenantCommands.map((command) =>
              commandEvent(
                'CommandExpired',
                { tenantId, commandId: command.commandId, undelivered: command.undelivered, enqueuedAt: command.enqueuedAt.toISOString(), ttlMs: commandTtlMs },
                EXPIRY_ACTOR,
                at,
              ),
            );
            await appendInTransaction(tx, commandsStream(tenantId), events);
          }
          return commands.length;
        });
        expired += batch;
        if (batch < EXPIRY_BATCH) return { expired };
      }
    },
  };
}
