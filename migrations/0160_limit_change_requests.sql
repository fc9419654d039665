-- projections/limitChangeRequests.ts: every limit change request (scheduled, or waiting for a second
-- operator), its state and who proposed, approved, rejected or withdrew it, with their reasons and times.
CREATE TABLE gl_limit_change_requests (
  change_id text PRIMARY KEY,
  command text NOT NULL,
  target_kind text NOT NULL,
  tenant_id text,
  tier_id text,
  dimension text NOT NULL,
  planned jsonb NOT NULL,
  effective_from timestamptz NOT NULL,
  needs_approval boolean NOT NULL,
  approval_expires_at timestamptz,
  state text NOT NULL,
  proposer text NOT NULL,
  proposer_reason text,
  proposed_at timestamptz NOT NULL,
  decided_by text,
  decision_reason text,
  decided_at timestamptz,
  applied_at timestamptz,
  error text,
  position text NOT NULL
);
CREATE INDEX gl_limit_change_requests_open ON gl_limit_change_requests (effective_from)
  WHERE state IN ('PENDING_APPROVAL', 'SCHEDULED');
CREATE INDEX gl_limit_change_requests_order ON gl_limit_change_requests (proposed_at DESC, change_id);

-- Written by the projections that fold the limit itself (tiers, tenant overrides, platform), in the
-- transaction that changed the limit: a request whose change is here is in the base tables, so readers stop
-- laying it over them (src/control-plane/change-requests/dueChanges.ts). Order-free: whichever projection runs
-- first, a change is laid over the base tables until the base tables hold it, never after.
CREATE TABLE gl_limit_change_requests_applied (
  change_id text PRIMARY KEY
);

-- projections/limitHistory.ts (version 3): a change that came from a request names its proposer and approver.
ALTER TABLE gl_limit_history ADD COLUMN approval jsonb;
