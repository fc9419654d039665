// What each role may read, and who may deliver commands, in one place: the schema's auth scopes and guards
// ask here. Who may change limits is the control plane's decision (authorize in src/control-plane/controlPlaneCommand.ts).
import type { Caller, Role } from '../control-plane/index.ts';

export const ROLES: readonly Role[] = ['OPERATOR', 'AUDITOR', 'SERVICE', 'TENANT_ADMIN', 'TENANT_VIEWER'];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function isTenantRole(role: Role): boolean {
  return role === 'TENANT_ADMIN' || role === 'TENANT_VIEWER';
}

/** Limits, tiers, history and trends of every tenant. */
export function canReadEverything(actor: Caller): boolean {
  return actor.role === 'OPERATOR' || actor.role === 'AUDITOR';
}

/** One tenant's limits, overrides and command backlog. Enforcement points read any tenant's limits. */
export function canReadTenant(actor: Caller, tenantId: string): boolean {
  if (canReadEverything(actor) || actor.role === 'SERVICE') return true;
  return isTenantRole(actor.role) && actor.tenantId === tenantId;
}

/** One tenant's history and trends: auditors and operators for all, tenant roles for their own. */
export function canAuditTenant(actor: Caller, tenantId: string): boolean {
  if (canReadEverything(actor)) return true;
  return isTenantRole(actor.role) && actor.tenantId === tenantId;
}

/** Enqueue and deliver commands: command-delivery (SERVICE), operators, and a tenant's own admin. */
export function canDeliverCommands(actor: Caller, tenantId: string): boolean {
  if (actor.role === 'OPERATOR' || actor.role === 'SERVICE') return true;
  return actor.role === 'TENANT_ADMIN' && actor.tenantId === tenantId;
}

/** Issue, list and revoke a tenant's ingest keys: operators, and the tenant's own admin. */
export function canManageIngestKeys(actor: Caller, tenantId: string): boolean {
  if (actor.role === 'OPERATOR') return true;
  return actor.role === 'TENANT_ADMIN' && actor.tenantId === tenantId;
}
