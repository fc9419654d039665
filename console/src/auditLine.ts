// One line of the audit timeline in words (the Audit page): the level a change is of, and what it did. Kept
// apart from the page so that it is tested without a browser (test/unit/console/auditLine.test.ts).
import { formatLimit, type LimitValue } from './api.ts';

export interface Change {
  at: string;
  actor: string;
  reason: string | null;
  kind: string;
  /** SHADOW: the change set a shadow limit, which refuses nothing. */
  mode?: 'ENFORCE' | 'SHADOW';
  dimension: string | null;
  tenantId: string | null;
  tierId: string | null;
  previousTierId: string | null;
  previous: LimitValue | null;
  value: LimitValue | null;
  policy: string | null;
  previousPolicy: string | null;
  expiresAt: string | null;
  /** Set when the change came from a request: who proposed and who approved it, why and when. */
  approval?: {
    proposedBy: string;
    proposedAt: string;
    proposerReason: string | null;
    effectiveFrom: string;
    approvedBy: string | null;
    approvedAt: string | null;
    approverReason: string | null;
  } | null;
}

export function level(change: Change): string {
  if (change.tenantId) return `tenant ${change.tenantId}`;
  if (change.tierId) return `tier ${change.tierId}`;
  return 'platform';
}

/** What the change did, in words: a registration has no before and after, a tier assignment moves between tiers. */
export function beforeAfter(change: Change): string {
  if (change.kind === 'TENANT_REGISTERED') return change.tierId ? `registered on tier ${change.tierId}` : 'registered with no tier (platform defaults apply)';
  if (change.policy || change.previousPolicy) return `${change.previousPolicy ?? 'default'} → ${change.policy ?? 'default'}`;
  if (change.kind === 'TENANT_TIER_ASSIGNED' || change.previousTierId !== null) return `${change.previousTierId ?? 'no tier'} → ${change.tierId ?? 'no tier'}`;
  return `${formatLimit(change.previous)} → ${formatLimit(change.value)}`;
}


/** Who proposed and who approved a change that came from a request, with reasons and times; '' otherwise. */
export function approvalLine(change: Change): string {
  const approval = change.approval;
  if (!approval) return '';
  const at = (iso: string) => new Date(iso).toLocaleString();
  const proposed = `proposed by ${approval.proposedBy} at ${at(approval.proposedAt)}${approval.proposerReason ? ` (“${approval.proposerReason}”)` : ''}`;
  const approved = approval.approvedBy
    ? `approved by ${approval.approvedBy} at ${at(approval.approvedAt!)}${approval.approverReason ? ` (“${approval.approverReason}”)` : ''}`
    : `scheduled for ${at(approval.effectiveFrom)}`;
  return `${proposed}; ${approved}`;
}
