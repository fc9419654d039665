import type { SettleOutcome } from './types.ts';

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
