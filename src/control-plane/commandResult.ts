// What a command returns. Expected outcomes, refusals included, are values; exceptions are faults.
import type { Position } from '../ledger/eventStore.ts';

export type CommandErrorKind =
  | 'InvalidLimit'
  | 'InvalidInput'
  | 'UnknownTenant'
  | 'UnknownTier'
  | 'UnknownDimension'
  | 'TierAlreadyDefined'
  | 'TenantAlreadyRegistered'
  | 'ConcurrentEdit'
  | 'Forbidden';

export interface CommandError {
  kind: CommandErrorKind;
  /** The input field at fault, when one is. */
  field?: string;
  message: string;
}

export type CommandResult = { status: 'applied'; position: Position } | { status: 'failed'; error: CommandError };

export function commandError(kind: CommandErrorKind, message: string, field?: string): CommandError {
  return field === undefined ? { kind, message } : { kind, field, message };
}
