// The shape of a control-plane command: pure functions of the input, the state of the streams it reads and
// the current time. The runner (controlPlane.ts) loads the state, appends the decision with the target
// stream's expected revision, and decides again on fresh state when another edit won the race.
import type { ControlPlaneEvent } from '../ledger/catalog/controlPlane.ts';
import type { CommandError } from './commandResult.ts';
import type { PlatformState, TenantState, TierState } from './state.ts';

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

export interface CommandDefinition<Input> {
  /** Who may run it besides an OPERATOR (who may run everything). */
  alsoAllowed: 'nobody' | 'tenant-admin';
  /** Checks the ids that name streams; the streams to load. */
  plan(input: Input): StreamPlan | CommandError;
  decide(input: Input, view: ControlPlaneView, now: Date): Decided | CommandError;
}
