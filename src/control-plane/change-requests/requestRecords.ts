// Limit change requests as the read model holds them (projections/limitChangeRequests.ts): the queue an
// operator approves from, the scheduled changes shown as pending beside effective limits, and what each
// process's scheduler arms timers for. An unapproved request past its approval_expires_at reads as EXPIRED.
import type { Queryable } from '../../db/db.ts';
import type { Dimension } from '../../governance/index.ts';
import type { ControlPlaneEvent, LimitChangeCommand } from '../../ledger/index.ts';
import { pageSize } from '../tenantRecords.ts';
import type { LimitChangeRequestState } from './requests.ts';

export interface LimitChangeRequestRecord {
  changeId: string;
  command: LimitChangeCommand;
  targetKind: 'platform' | 'tier' | 'tenant';
  tenantId: string | null;
  tierId: string | null;
  dimension: Dimension;
  /** The event the change will append (its value, and the value it replaces as of the request). */
  planned: ControlPlaneEvent;
  effectiveFrom: Date;
  needsApproval: boolean;
  approvalExpiresAt: Date | null;
  state: LimitChangeRequestState;
  proposer: string;
  proposerReason: string | null;
  proposedAt: Date;
  /** The approver, or who rejected or withdrew it. */
  decidedBy: string | null;
  decisionReason: string | null;
  decidedAt: Date | null;
  appliedAt: Date | null;
  error: string | null;
  position: string;
}

interface Row {
  change_id: string;
  command: LimitChangeCommand;
  target_kind: 'platform' | 'tier' | 'tenant';
  tenant_id: string | null;
  tier_id: string | null;
  dimension: Dimension;
  planned: ControlPlaneEvent;
  effective_from: Date;
  needs_approval: boolean;
  approval_expires_at: Date | null;
  state: LimitChangeRequestState;
  proposer: string;
  proposer_reason: string | null;
  proposed_at: Date;
  decided_by: string | null;
  decision_reason: string | null;
  decided_at: Date | null;
  applied_at: Date | null;
  error: string | null;
  position: string;
}

export interface LimitChangeRequestQuery {
  /** Only requests in these states (EXPIRED included); all when absent or empty. */
  states?: readonly LimitChangeRequestState[] | null;
  tenantId?: string | null;
  tierId?: string | null;
  first?: number;
  now?: Date;
}

// The state EXPIRED is computed from the stored PENDING_APPROVAL and the instant asked about.
const STATE_SQL = `CASE WHEN r.state = 'PENDING_APPROVAL' AND r.approval_expires_at <= $1 THEN 'EXPIRED' ELSE r.state END`;

const LIST_SQL = `
SELECT * FROM (
  SELECT r.change_id, r.command, r.target_kind, r.tenant_id, r.tier_id, r.dimension, r.planned, r.effective_from,
         r.needs_approval, r.approval_expires_at, ${STATE_SQL} AS state, r.proposer, r.proposer_reason, r.proposed_at,
         r.decided_by, r.decision_reason, r.decided_at, r.applied_at, r.error, r.position
  FROM gl_limit_change_requests r
  WHERE ($2::text IS NULL OR r.tenant_id = $2 OR (r.target_kind = 'tier' AND r.tier_id = (SELECT tier_id FROM gl_tenants WHERE tenant_id = $2))
         OR r.target_kind = 'platform')
    AND ($3::text IS NULL OR r.tier_id = $3)
) s
WHERE (cardinality($4::text[]) = 0 OR s.state = ANY($4::text[]))
ORDER BY s.proposed_at DESC, s.change_id
LIMIT $5`;

export async function listLimitChangeRequests(q: Queryable, query: LimitChangeRequestQuery = {}): Promise<LimitChangeRequestRecord[]> {
  const { rows } = await q.query<Row>(LIST_SQL, [
    query.now ?? new Date(),
    query.tenantId ?? null,
    query.tierId ?? null,
    [...(query.states ?? [])],
    pageSize(query.first),
  ]);
  return rows.map(toRecord);
}

/** Scheduled changes not yet in force or not yet applied: what a process's scheduler arms timers for. */
export async function loadScheduledRequests(q: Queryable): Promise<LimitChangeRequestRecord[]> {
  const { rows } = await q.query<Row>(
    `SELECT r.*, r.state FROM gl_limit_change_requests r WHERE r.state = 'SCHEDULED' ORDER BY r.effective_from`,
  );
  return rows.map(toRecord);
}

function toRecord(row: Row): LimitChangeRequestRecord {
  const date = (value: Date | null) => (value === null ? null : new Date(value));
  return {
    changeId: row.change_id,
    command: row.command,
    targetKind: row.target_kind,
    tenantId: row.tenant_id,
    tierId: row.tier_id,
    dimension: row.dimension,
    planned: row.planned,
    effectiveFrom: new Date(row.effective_from),
    needsApproval: row.needs_approval,
    approvalExpiresAt: date(row.approval_expires_at),
    state: row.state,
    proposer: row.proposer,
    proposerReason: row.proposer_reason,
    proposedAt: new Date(row.proposed_at),
    decidedBy: row.decided_by,
    decisionReason: row.decision_reason,
    decidedAt: date(row.decided_at),
    appliedAt: date(row.applied_at),
    error: row.error,
    position: row.position,
  };
}
