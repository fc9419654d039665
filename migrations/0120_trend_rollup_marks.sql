-- Trends are written per minute as events arrive; hours and days are rolled up from minutes once those
-- minutes are past (src/metrics/trends/upsertRollups.ts). Each family keeps one row saying how far its
-- minutes have been rolled up: every minute before `rolled_through` (unix seconds) is in the hour and day
-- tables; the minutes from it on are not yet, and reads add them (bucketRows). Until now every increment
-- went to all three tables, so every minute already stored is rolled up: the mark starts just after the
-- newest one (0 for a family with no minutes, where nothing is rolled up and nothing needs to be).
CREATE TABLE gl_admission_trends_rolled (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  rolled_through bigint NOT NULL
);
CREATE TABLE gl_unresolved_admissions_rolled (LIKE gl_admission_trends_rolled INCLUDING ALL);
CREATE TABLE gl_inference_spend_rolled (LIKE gl_admission_trends_rolled INCLUDING ALL);

INSERT INTO gl_admission_trends_rolled (rolled_through)
  SELECT coalesce(extract(epoch FROM max(bucket_start))::bigint + 60, 0) FROM gl_admission_trends_minute;
INSERT INTO gl_unresolved_admissions_rolled (rolled_through)
  SELECT coalesce(extract(epoch FROM max(bucket_start))::bigint + 60, 0) FROM gl_unresolved_admissions_minute;
INSERT INTO gl_inference_spend_rolled (rolled_through)
  SELECT coalesce(extract(epoch FROM max(bucket_start))::bigint + 60, 0) FROM gl_inference_spend_minute;
