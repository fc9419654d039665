-- Undelivered-command ceiling (src/commands).

-- The authoritative per-tenant backlog count. Every enqueue takes this row with a conditional UPDATE
-- (undelivered < ceiling), so the count cannot pass the ceiling however many processes enqueue at once:
-- the row lock orders them, and the condition is re-checked on the row version each one finally locks.
CREATE TABLE gl_command_backlog_guard (
  tenant_id text PRIMARY KEY,
  undelivered integer NOT NULL DEFAULT 0 CHECK (undelivered >= 0),
  -- Recent delivery pace, for the retryAfterSeconds a rejection carries (src/commands/retryAfter.ts).
  last_delivered_at timestamptz,
  delivery_interval_ms_ewma double precision
);

-- Commands that were accepted (a rejection leaves no row: the same commandId may be enqueued again later).
-- The primary key makes a commandId count once per tenant; a concurrent duplicate fails on it and retries.
CREATE TABLE gl_commands (
  tenant_id text NOT NULL,
  command_id text NOT NULL,
  device_id text NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'delivered', 'failed', 'cancelled', 'expired')),
  enqueued_at timestamptz NOT NULL,
  settled_at timestamptz,
  -- The acceptance as first answered, replayed to a caller who enqueues the same commandId again.
  undelivered_at_enqueue integer NOT NULL,
  ceiling_at_enqueue integer NOT NULL,
  PRIMARY KEY (tenant_id, command_id)
);
-- Expiry scans only what is still queued, oldest first.
CREATE INDEX gl_commands_queued_by_age ON gl_commands (enqueued_at) WHERE status = 'queued';

-- Read model built from the ledger (projections/commandBacklog.ts). Once caught up, undelivered here
-- equals gl_command_backlog_guard.undelivered for every tenant; a rebuild must reproduce it.
CREATE TABLE gl_command_backlog_view (
  tenant_id text PRIMARY KEY,
  undelivered integer NOT NULL,
  accepted_total bigint NOT NULL,
  rejected_total bigint NOT NULL,
  settled_total bigint NOT NULL
);
