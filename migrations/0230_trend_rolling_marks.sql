-- A roll-up of a family's minutes into hours and days runs in two steps (src/metrics/trends/upsertRollups.ts):
-- it first names the minute it rolls up to (`rolling_through`, unix seconds), briefly and with pages held back,
-- then rolls the minutes before it up while pages of later minutes go on. NULL: no roll-up named one beyond
-- `rolled_through`.
ALTER TABLE gl_admission_trends_rolled ADD COLUMN rolling_through bigint;
ALTER TABLE gl_unresolved_admissions_rolled ADD COLUMN rolling_through bigint;
ALTER TABLE gl_inference_spend_rolled ADD COLUMN rolling_through bigint;
