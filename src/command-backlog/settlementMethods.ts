// markDelivered, markFailed and cancel check their input the same way whichever store keeps the backlog
// (database rows or the ledger stream); only how a settlement is decided and recorded differs.
import type { CommandSettlement } from '../ledger/catalog/commands.ts';
import { checkText, validateRef } from './validateCommand.ts';
import type { CommandActor, CommandBacklog, CommandRef, SettleOutcome } from './types.ts';

/** Decides and records one settlement of a command whose input is already checked. */
export type SettleCommand = (
  actor: CommandActor,
  ref: CommandRef,
  settlement: Exclude<CommandSettlement, 'expired'>,
  detail: { error?: string | null; reason?: string },
) => Promise<SettleOutcome>;

export function settlementMethods(settle: SettleCommand): Pick<CommandBacklog, 'markDelivered' | 'markFailed' | 'cancel'> {
  return {
    async markDelivered(actor, ref) {
      return validateRef(ref) ?? settle(actor, ref, 'delivered', {});
    },

    async markFailed(actor, ref) {
      return validateRef(ref) ?? checkText('error', ref.error, false) ?? settle(actor, ref, 'failed', { error: ref.error ?? null });
    },

    async cancel(actor, ref) {
      return validateRef(ref) ?? checkText('reason', ref.reason, true) ?? settle(actor, ref, 'cancelled', { reason: ref.reason });
    },
  };
}
