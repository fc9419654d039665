-- Webhooks (src/webhooks): the registrations, with their signing secrets (kept out of the ledger, which never
-- forgets), and the outbox of deliveries the webhook-outbox projection fills from the ledger's notices, one row
-- per (webhook, event): its attempts, status and last answer are the webhook's delivery log.
CREATE TABLE gl_webhooks (
  webhook_id text PRIMARY KEY,
  -- NULL: platform-wide (every tenant's notices).
  tenant_id text,
  url text NOT NULL,
  secret text NOT NULL,
  events jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE gl_webhook_deliveries (
  webhook_id text NOT NULL,
  event_id uuid NOT NULL,
  event_type text NOT NULL,
  tenant_id text,
  body text NOT NULL,
  -- PENDING (due at next_attempt_at), DELIVERED, or FAILED (no 2xx within 24 hours of the notice).
  status text NOT NULL DEFAULT 'PENDING',
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  last_attempt_at timestamptz,
  last_status_code integer,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (webhook_id, event_id)
);
CREATE INDEX gl_webhook_deliveries_due ON gl_webhook_deliveries (next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX gl_webhook_deliveries_log ON gl_webhook_deliveries (webhook_id, created_at);
