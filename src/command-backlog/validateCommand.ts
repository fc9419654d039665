// Input checks, before anything touches storage: a refused input appends nothing. Everything PostgreSQL
// would refuse (src/db/storableValues.ts) is refused here, so one bad enqueue never reaches the
// transaction it would share with others.
import { jsonProblem, textProblem } from '../db/storableValues.ts';
import { ID_PATTERN } from '../governance/index.ts';
import { commandFingerprint } from './answers.ts';
import type { CommandRef, EnqueueCommandInput, InputField, InvalidCommandInput, BacklogActor, CommandBacklog, SettleOutcome } from './types.ts';
import type { CommandSettlement } from '../ledger/index.ts';

export const MAX_ID_LENGTH = 256;
export const MAX_PAYLOAD_BYTES = 64 * 1024;
export const MAX_TEXT_LENGTH = 1_000;

export interface ValidCommand extends EnqueueCommandInput {
  status: 'valid';
  /** What makes a repeat of this commandId the same command (commandFingerprint in answers.ts). */
  fingerprint: string;
}

export function validateEnqueue(input: EnqueueCommandInput): ValidCommand | InvalidCommandInput {
  const idError = checkTenantId(input?.tenantId) ?? checkId('commandId', input.commandId) ?? checkId('deviceId', input.deviceId);
  if (idError) return idError;
  const payloadError = checkPayload(input.payload);
  if (payloadError) return payloadError;
  const { tenantId, commandId, deviceId, payload } = input;
  return { status: 'valid', tenantId, commandId, deviceId, payload, fingerprint: commandFingerprint(deviceId, payload) };
}

export function validateRef(ref: CommandRef): InvalidCommandInput | undefined {
  return checkTenantId(ref?.tenantId) ?? checkId('commandId', ref.commandId);
}

/** A free-text field (a cancel's reason, a failure's error): required ones must not be blank. */
export function checkText(field: InputField, value: unknown, required: boolean): InvalidCommandInput | undefined {
  if (value === undefined || value === null) return required ? invalid(field, `${field} is required`) : undefined;
  if (typeof value !== 'string') return invalid(field, `${field} must be a string`);
  if (required && value.trim() === '') return invalid(field, `${field} must not be blank`);
  if (value.length > MAX_TEXT_LENGTH) return invalid(field, `${field} is longer than ${MAX_TEXT_LENGTH} characters`);
  const problem = textProblem(value, field);
  return problem ? invalid(field, problem) : undefined;
}

function checkId(field: InputField, value: unknown): InvalidCommandInput | undefined {
  if (typeof value !== 'string') return invalid(field, `${field} must be a string`);
  if (value.trim() === '') return invalid(field, `${field} must not be empty`);
  if (value.length > MAX_ID_LENGTH) return invalid(field, `${field} is longer than ${MAX_ID_LENGTH} characters`);
  const problem = textProblem(value, field);
  return problem ? invalid(field, problem) : undefined;
}

// A tenant id names the tenant's streams and rows: one that could never be registered (ID_PATTERN, as the
// control plane requires) is bad input, not an unknown tenant, and must not reach storage.
function checkTenantId(value: unknown): InvalidCommandInput | undefined {
  if (typeof value === 'string' && ID_PATTERN.test(value)) return undefined;
  return invalid('tenantId', "tenantId must be 1 to 64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit");
}

function checkPayload(payload: unknown): InvalidCommandInput | undefined {
  const problem = jsonProblem(payload, 'payload');
  if (problem) return invalid('payload', problem);
  const bytes = Buffer.byteLength(JSON.stringify(payload), 'utf8');
  if (bytes > MAX_PAYLOAD_BYTES) return invalid('payload', `payload is ${bytes} bytes as JSON; at most ${MAX_PAYLOAD_BYTES} are allowed`);
  return undefined;
}

function invalid(field: InputField, message: string): InvalidCommandInput {
  return { status: 'invalid', field, message };
}

// markDelivered, markFailed and cancel check their input the same way whichever store keeps the backlog
// (database rows or the ledger stream); only how a settlement is decided and recorded differs.
/** Decides and records one settlement of a command whose input is already checked. */
export type SettleCommand = (
  actor: BacklogActor,
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
