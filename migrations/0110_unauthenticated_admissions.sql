-- Readings charged at the ingest door (before the credential, as the spec orders) of requests then refused
-- for their credential (401): counted apart from admitted ones. Rows written before this count had none.
ALTER TABLE gl_admission_trends_minute ADD COLUMN unauthenticated_units bigint NOT NULL DEFAULT 0,
  ADD COLUMN unauthenticated_messages bigint NOT NULL DEFAULT 0;
ALTER TABLE gl_admission_trends_hour ADD COLUMN unauthenticated_units bigint NOT NULL DEFAULT 0,
  ADD COLUMN unauthenticated_messages bigint NOT NULL DEFAULT 0;
ALTER TABLE gl_admission_trends_day ADD COLUMN unauthenticated_units bigint NOT NULL DEFAULT 0,
  ADD COLUMN unauthenticated_messages bigint NOT NULL DEFAULT 0;
