-- Read models of projections/commandList.ts, built from the commands streams of the ledger (so they exist
-- on every ledger, EventStoreDB included).
-- Every accepted command with its device, payload, status and times: Query.commands.
CREATE TABLE gl_command_list (
  tenant_id text NOT NULL,
  command_id text NOT NULL,
  device_id text NOT NULL,
  payload jsonb,
  status text NOT NULL CHECK (status IN ('queued', 'delivered', 'failed', 'cancelled', 'expired')),
  enqueued_at timestamptz NOT NULL,
  settled_at timestamptz,
  error text,
  PRIMARY KEY (tenant_id, command_id)
);
-- Newest first, per tenant, optionally of one status.
CREATE INDEX gl_command_list_by_tenant ON gl_command_list (tenant_id, enqueued_at DESC, command_id DESC);

-- Refusals per tenant, reason and minute: Query.commandRejectionTrend sums them into its buckets.
CREATE TABLE gl_command_rejections_minute (
  tenant_id text NOT NULL,
  bucket_start timestamptz NOT NULL,
  reason text NOT NULL,
  rejected bigint NOT NULL,
  PRIMARY KEY (tenant_id, bucket_start, reason)
);
