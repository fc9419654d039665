// Events of limit change requests: a limit change that does not take effect at once, because it is scheduled
// for a later instant or waits for a second operator's approval (docs/governance-model.md, "Scheduled and
// approved changes"). One stream per request; the change itself is appended to its tier's, tenant's or the
// platform's stream when it takes effect, naming the request (metadata.changeId). Who and why travel in the
// metadata (actor, reason, occurredAt) as for every control-plane event.
import type { ControlPlaneEvent } from './controlPlane.ts';

export const limitChangeRequestStream = (changeId: string): string => `limit-change-${changeId}`;

/** The commands a request can carry: every limit mutation. */
export type LimitChangeCommand = 'setPlatformDefault' | 'setTierLimit' | 'clearTierLimit' | 'setTenantOverride' | 'clearTenantOverride';

export interface LimitChangeRequestedData {
  changeId: string;
  command: LimitChangeCommand;
  /** The command's input as given (without effectiveFrom), run again when the change takes effect. */
  input: Record<string, unknown>;
  /** The event the command decided when it was requested: what the change will be (shown while pending). */
  planned: ControlPlaneEvent;
  /** ISO 8601: the instant it takes effect (once approved, if it needs approval). */
  effectiveFrom: string;
  needsApproval: boolean;
  /** ISO 8601: a request still unapproved at this instant has expired; null when no approval is needed. */
  approvalExpiresAt: string | null;
}

export interface LimitChangeDecidedData {
  changeId: string;
}

export interface LimitChangeFailedData {
  changeId: string;
  /** Why the command refused when it was run at the instant (a clear of a limit already cleared). */
  error: string;
}

/** Which changes need a second operator; set by an OPERATOR on the platform stream. */
export interface LimitApprovals {
  tierChanges: boolean;
  platformChanges: boolean;
  /** An override whose rate (or ceiling) is above this many times the tenant's limit without it; null: none. */
  overrideAboveTimes: number | null;
  /** How long a request waits for approval before it expires. */
  expirySeconds: number;
}

export interface LimitApprovalsSetData {
  previous: LimitApprovals | null;
  approvals: LimitApprovals;
}

export type LimitChangeRequestEventMap = {
  LimitChangeRequested: LimitChangeRequestedData;
  LimitChangeApproved: LimitChangeDecidedData;
  LimitChangeRejected: LimitChangeDecidedData;
  LimitChangeWithdrawn: LimitChangeDecidedData;
  LimitChangeApplied: LimitChangeDecidedData;
  LimitChangeFailed: LimitChangeFailedData;
  LimitApprovalsSet: LimitApprovalsSetData;
};

export const LIMIT_CHANGE_REQUEST_EVENT_TYPES: readonly (keyof LimitChangeRequestEventMap)[] = [
  'LimitChangeRequested',
  'LimitChangeApproved',
  'LimitChangeRejected',
  'LimitChangeWithdrawn',
  'LimitChangeApplied',
  'LimitChangeFailed',
  'LimitApprovalsSet',
];
