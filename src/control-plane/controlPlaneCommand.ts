// What a control-plane command is (a change to tiers, tenants or platform settings, as opposed to a command
// for a device, which src/command-backlog queues): who calls it, the pure plan and decide it is made of, who may
// run it, and what it returns.
import type { ControlPlaneEvent, Position } from '../ledger/index.ts';
import type { PlatformState, TenantState, TierState } from './state.ts';

// Who is calling: the authenticated identity (the API's token) a control-plane command runs for, never taken
// from a command's input; every event a command appends names it as its actor. The API's resolvers read with
// the same Caller.
export type Role = 'OPERATOR' | 'AUDITOR' | 'SERVICE' | 'TENANT_ADMIN' | 'TENANT_VIEWER';

export interface Caller {
  id: string;
  role: Role;
  /** Set for tenant roles: the one tenant they may see and change. */
  tenantId?: string;
}

// The shape of a control-plane command: pure functions of the input, the state of the streams it reads and
// the current time. The runner (controlPlane.ts) loads the state, appends the decision with the target
// stream's expected revision, and decides again on fresh state when another edit won the race.
export interface ControlPlaneView {
  platform: PlatformState;
  tier(tierId: string): TierState | undefined;
  tenant(tenantId: string): TenantState | undefined;
}

export interface StreamPlan {
  /** The stream the decision appends to, at its expected revision. */
  target: string;
  /** Other streams the decision reads (existence of a tier a tenant is assigned to). */
  reads: readonly string[];
  /** Set for commands on one tenant: a TENANT_ADMIN of that tenant may run the tenant-admin ones. */
  tenantId?: string;
}

export interface Decided {
  event: ControlPlaneEvent;
  reason?: string;
}

export interface ControlPlaneCommand<Input> {
  /** Who may run it besides an OPERATOR (who may run everything). */
  alsoAllowed: 'nobody' | 'tenant-admin';
  /** Checks the ids that name streams; the streams to load. */
  plan(input: Input): StreamPlan | ControlPlaneError;
  decide(input: Input, view: ControlPlaneView, now: Date): Decided | ControlPlaneError;
}

// What a command returns. Expected outcomes, refusals included, are values; exceptions are faults.
export type ControlPlaneErrorKind =
  | 'InvalidLimit'
  | 'InvalidInput'
  | 'UnknownTenant'
  | 'UnknownTier'
  | 'UnknownDimension'
  | 'TierAlreadyDefined'
  | 'TenantAlreadyRegistered'
  | 'ConcurrentEdit'
  | 'Forbidden';

export interface ControlPlaneError {
  kind: ControlPlaneErrorKind;
  /** The input field at fault, when one is. */
  field?: string;
  message: string;
}

export type ControlPlaneResult = { status: 'applied'; position: Position } | { status: 'failed'; error: ControlPlaneError };

export function controlPlaneError(kind: ControlPlaneErrorKind, message: string, field?: string): ControlPlaneError {
  return field === undefined ? { kind, message } : { kind, field, message };
}

// Who may change what. Operators change everything; a tenant admin changes only the tenant-level choices
// that are theirs (branding, API over-limit policy) of their own tenant; every other role only reads.
export function authorize(actor: Caller, definition: ControlPlaneCommand<never>, plan: StreamPlan): ControlPlaneError | undefined {
  if (typeof actor?.id !== 'string' || actor.id.trim() === '') return controlPlaneError('Forbidden', 'the caller has no identity');
  if (actor.role === 'OPERATOR') return undefined;
  if (definition.alsoAllowed === 'tenant-admin' && actor.role === 'TENANT_ADMIN' && plan.tenantId !== undefined) {
    if (actor.tenantId === plan.tenantId) return undefined;
    return controlPlaneError('Forbidden', `a tenant admin of ${actor.tenantId ?? 'no tenant'} may not change tenant ${plan.tenantId}`, 'tenantId');
  }
  return controlPlaneError('Forbidden', `role ${actor.role} may not run this command`);
}
