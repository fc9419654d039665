-- What period quotas refused (a part of rejected: HTTP 429 with X-RateLimit-Scope: quota), in units and
-- messages, per tenant, dimension, allowance and bucket. Rows written before quotas had none.
ALTER TABLE gl_admission_trends_minute ADD COLUMN quota_rejected_units bigint NOT NULL DEFAULT 0,
  ADD COLUMN quota_rejected_messages bigint NOT NULL DEFAULT 0;
ALTER TABLE gl_admission_trends_hour ADD COLUMN quota_rejected_units bigint NOT NULL DEFAULT 0,
  ADD COLUMN quota_rejected_messages bigint NOT NULL DEFAULT 0;
ALTER TABLE gl_admission_trends_day ADD COLUMN quota_rejected_units bigint NOT NULL DEFAULT 0,
  ADD COLUMN quota_rejected_messages bigint NOT NULL DEFAULT 0;
