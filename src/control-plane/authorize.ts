// Who may change what. Operators change everything; a tenant admin changes only the tenant-level choices
// that are theirs (branding, API over-limit policy) of their own tenant; every other role only reads.
import type { Actor } from './actor.ts';
import type { CommandDefinition, StreamPlan } from './command.ts';
import { commandError, type CommandError } from './commandResult.ts';

export function authorize(actor: Actor, definition: CommandDefinition<never>, plan: StreamPlan): CommandError | undefined {
  if (typeof actor?.id !== 'string' || actor.id.trim() === '') return commandError('Forbidden', 'the caller has no identity');
  if (actor.role === 'OPERATOR') return undefined;
  if (definition.alsoAllowed === 'tenant-admin' && actor.role === 'TENANT_ADMIN' && plan.tenantId !== undefined) {
    if (actor.tenantId === plan.tenantId) return undefined;
    return commandError('Forbidden', `a tenant admin of ${actor.tenantId ?? 'no tenant'} may not change tenant ${plan.tenantId}`, 'tenantId');
  }
  return commandError('Forbidden', `role ${actor.role} may not run this command`);
}
