-- Period quotas counted in the database when there is no Redis (src/quotas/databaseQuotaBudget.ts): one row per
-- tenant, dimension and period, the units the replicas reserved (and admitted on credit) of that period's quota.
-- Each reservation is one INSERT ... ON CONFLICT DO UPDATE, which locks the row, so replicas never double-spend.
CREATE TABLE gl_quota_usage (
  tenant_id text NOT NULL,
  dimension text NOT NULL,
  period_start timestamptz NOT NULL,
  period_end timestamptz NOT NULL,
  used bigint NOT NULL,
  -- What the last reservation granted (RETURNING sees only the new row).
  last_grant bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, dimension, period_start)
);

CREATE INDEX gl_quota_usage_period_end ON gl_quota_usage (period_end);
