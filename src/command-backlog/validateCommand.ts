// Input checks, before anything touches storage: a refused input appends nothing.
import type { CommandRef, EnqueueCommandInput, InputField, InvalidCommandInput } from './types.ts';

export const MAX_ID_LENGTH = 256;
export const MAX_PAYLOAD_BYTES = 64 * 1024;
export const MAX_TEXT_LENGTH = 1_000;

export interface ValidCommand extends EnqueueCommandInput {
  status: 'valid';
}

export function validateEnqueue(input: EnqueueCommandInput): ValidCommand | InvalidCommandInput {
  const idError = checkId('tenantId', input?.tenantId) ?? checkId('commandId', input.commandId) ?? checkId('deviceId', input.deviceId);
  if (idError) return idError;
  const payloadError = checkPayload(input.payload);
  if (payloadError) return payloadError;
  return { status: 'valid', tenantId: input.tenantId, commandId: input.commandId, deviceId: input.deviceId, payload: input.payload };
}

export function validateRef(ref: CommandRef): InvalidCommandInput | undefined {
  return checkId('tenantId', ref?.tenantId) ?? checkId('commandId', ref.commandId);
}

/** A free-text field (a cancel's reason, a failure's error): required ones must not be blank. */
export function checkText(field: InputField, value: unknown, required: boolean): InvalidCommandInput | undefined {
  if (value === undefined || value === null) return required ? invalid(field, `${field} is required`) : undefined;
  if (typeof value !== 'string') return invalid(field, `${field} must be a string`);
  if (required && value.trim() === '') return invalid(field, `${field} must not be blank`);
  if (value.length > MAX_TEXT_LENGTH) return invalid(field, `${field} is longer than ${MAX_TEXT_LENGTH} characters`);
  return undefined;
}

function checkId(field: InputField, value: unknown): InvalidCommandInput | undefined {
  if (typeof value !== 'string') return invalid(field, `${field} must be a string`);
  if (value.trim() === '') return invalid(field, `${field} must not be empty`);
  if (value.length > MAX_ID_LENGTH) return invalid(field, `${field} is longer than ${MAX_ID_LENGTH} characters`);
  if (value.includes('\u0000')) return invalid(field, `${field} contains a NUL character`);
  return undefined;
}

function checkPayload(payload: unknown): InvalidCommandInput | undefined {
  const problem = jsonProblem(payload, '$', new Set());
  if (problem) return invalid('payload', `payload is not JSON: ${problem}`);
  const json = JSON.stringify(payload);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > MAX_PAYLOAD_BYTES) return invalid('payload', `payload is ${bytes} bytes as JSON; at most ${MAX_PAYLOAD_BYTES} are allowed`);
  return undefined;
}

// JSON.stringify quietly turns NaN into null, drops undefined and functions, and calls toJSON (a Date
// becomes a string): the stored command would differ from what was sent. So only values JSON can hold
// exactly pass: null, booleans, finite numbers, strings without NUL (jsonb cannot store it), arrays and
// plain objects of those.
function jsonProblem(value: unknown, path: string, seen: Set<object>): string | undefined {
  if (value === null || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} is ${value}`;
  if (typeof value === 'string') return value.includes('\u0000') ? `${path} contains a NUL character` : undefined;
  if (typeof value !== 'object') return `${path} is ${value === undefined ? 'missing' : `a ${typeof value}`}`;
  if (seen.has(value)) return `${path} refers back to itself`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = jsonProblem(value[i], `${path}[${i}]`, seen);
        if (problem) return problem;
      }
      return undefined;
    }
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return `${path} is not a plain object`;
    for (const [key, item] of Object.entries(value)) {
      const problem = jsonProblem(item, `${path}.${key}`, seen);
      if (problem) return problem;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

function invalid(field: InputField, message: string): InvalidCommandInput {
  return { status: 'invalid', field, message };
}
