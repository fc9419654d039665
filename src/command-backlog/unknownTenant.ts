import type { CommandRejected } from './types.ts';

/** The answer to an enqueue for a tenant that does not exist: not retryable, no ceiling, nothing recorded. */
export function unknownTenant(commandId: string): CommandRejected {
  return { status: 'rejected', commandId, reason: 'UNKNOWN_TENANT', retryable: false, retryAfterSeconds: null, undelivered: 0, ceiling: null };
}
