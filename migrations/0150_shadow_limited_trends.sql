-- What shadow limits (a limit set with mode SHADOW: decided beside the enforced one, refusing nothing) would
-- have refused, in units and messages, per tenant, dimension, allowance and bucket. Rows written before
-- shadow limits had none.
ALTER TABLE gl_admission_trends_minute ADD COLUMN shadow_limited_units bigint NOT NULL DEFAULT 0,
  ADD COLUMN shadow_limited_messages bigint NOT NULL DEFAULT 0;
ALTER TABLE gl_admission_trends_hour ADD COLUMN shadow_limited_units bigint NOT NULL DEFAULT 0,
  ADD COLUMN shadow_limited_messages bigint NOT NULL DEFAULT 0;
ALTER TABLE gl_admission_trends_day ADD COLUMN shadow_limited_units bigint NOT NULL DEFAULT 0,
  ADD COLUMN shadow_limited_messages bigint NOT NULL DEFAULT 0;
