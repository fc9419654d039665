// The command backlog when the ledger lives in PostgreSQL/PGlite: the guard count, the command row and the
// ledger event are written in ONE transaction (appendInTransaction), so they commit together or not at all,
// and the ledger can never disagree with the count.
import type { Db } from '../../db/db.ts';
import { appendInTransaction } from '../../ledger/postgres/appendInTransaction.ts';
import { commandsStream, SETTLEMENT_EVENT_TYPES } from '../../ledger/catalog/commands.ts';
import { commandEvent } from '../commandEvents.ts';
import { EXPIRY_ACTOR } from '../expiryActor.ts';
import { retryAfterSeconds } from '../retryAfter.ts';
import { retryTransaction } from '../retryTransaction.ts';
import type { BacklogOptions } from '../backlogOptions.ts';
import { settleOutcome } from '../settleOutcome.ts';
import { checkText, validateEnqueue, validateRef } from '../validateCommand.ts';
import type { CommandActor, CommandBacklog, CommandRef, EnqueueOutcome, SettleOutcome } from '../types.ts';
import { expireQueuedCommands } from './expireQueuedCommands.ts';
import { settleQueuedCommand } from './settleQueuedCommand.ts';
import { takeBacklogSlot } from './takeBacklogSlot.ts';

/** Commands expired per transaction: bounds how long one expiry pass holds guard rows. */
const EXPIRY_BATCH = 500;

export function createDatabaseCommandBacklog(db: Db, { ceilings, commandTtlMs, now }: BacklogOptions): CommandBacklog {
  const settle = async (
    actor: CommandActor,
    ref: CommandRef,
    settlement: 'delivered' | 'failed' | 'cancelled',
    detail: { error?: string | null; reason?: string },
  ): Promise<SettleOutcome> => {
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

  return {
    async enqueue(actor, input): Promise<EnqueueOutcome> {
      const command = validateEnqueue(input);
      if (command.status === 'invalid') return command;
      const stream = commandsStream(command.tenantId);
      const at = now();
      return retryTransaction(db, async (tx) => {
        const limit = await ceilings(tx, command.tenantId);
        const base = { tenantId: command.tenantId, commandId: command.commandId, deviceId: command.deviceId };
        if (!limit) {
          const rejected = { commandId: command.commandId, reason: 'UNKNOWN_TENANT', retryable: false, retryAfterSeconds: null, undelivered: 0, ceiling: null } as const;
          await appendInTransaction(tx, stream, [commandEvent('CommandRejected', { ...base, ...rejected }, actor, at)]);
          return { status: 'rejected', ...rejected };
        }
        const decision = await takeBacklogSlot(tx, command, limit.ceiling, at);
        if (decision.kind === 'duplicate') {
          // Counted once: the first acceptance is answered again and nothing new is recorded.
          return { status: 'accepted', commandId: command.commandId, undelivered: decision.undelivered, ceiling: decision.ceiling };
        }
        if (decision.kind === 'taken') {
          const data = { ...base, payload: command.payload, undelivered: decision.undelivered, ceiling: limit.ceiling, ceilingSource: limit.source };
          await appendInTransaction(tx, stream, [commandEvent('CommandEnqueued', data, actor, at)]);
          return { status: 'accepted', commandId: command.commandId, undelivered: decision.undelivered, ceiling: limit.ceiling };
        }
        const rejected = {
          commandId: command.commandId,
          reason: 'CEILING_REACHED',
          retryable: true,
          retryAfterSeconds: retryAfterSeconds(decision.pace, at),
          undelivered: decision.undelivered,
          ceiling: limit.ceiling,
        } as const;
        await appendInTransaction(tx, stream, [commandEvent('CommandRejected', { ...base, ...rejected }, actor, at)]);
        return { status: 'rejected', ...rejected };
      });
    },

    async markDelivered(actor, ref) {
      return validateRef(ref) ?? settle(actor, ref, 'delivered', {});
    },

    async markFailed(actor, ref) {
      return validateRef(ref) ?? checkText('error', ref.error, false) ?? settle(actor, ref, 'failed', { error: ref.error ?? null });
    },

    async cancel(actor, ref) {
      return validateRef(ref) ?? checkText('reason', ref.reason, true) ?? settle(actor, ref, 'cancelled', { reason: ref.reason });
    },

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
