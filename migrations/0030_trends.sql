-- Trend read models: per-minute counts rolled up to hours and days in the same statement, so a read at any
-- bucket size touches few rows. Each granularity has its own table so retention prunes a table by time
-- alone. bucket_start is a UTC boundary (minute, hour, or day at 00:00 UTC).

-- Admissions per tenant, dimension and allowance ('' when the dimension has no allowances). The primary
-- key leads with (tenant_id, dimension, bucket_start) so one tenant's trend is one contiguous index range
-- whatever the number of allowances; the bucket_start index serves topShedders and pruning.
CREATE TABLE gl_admission_trends_minute (
  tenant_id text NOT NULL,
  dimension text NOT NULL,
  bucket_start timestamptz NOT NULL,
  allowance text NOT NULL,
  admitted_units bigint NOT NULL,
  admitted_messages bigint NOT NULL,
  shed_units bigint NOT NULL,
  shed_messages bigint NOT NULL,
  rejected_units bigint NOT NULL,
  rejected_messages bigint NOT NULL,
  hits integer NOT NULL,
  PRIMARY KEY (tenant_id, dimension, bucket_start, allowance)
);
CREATE INDEX gl_admission_trends_minute_start ON gl_admission_trends_minute (bucket_start);
CREATE TABLE gl_admission_trends_hour (LIKE gl_admission_trends_minute INCLUDING ALL);
CREATE TABLE gl_admission_trends_day (LIKE gl_admission_trends_minute INCLUDING ALL);

-- Traffic admitted at the platform default because the tenant's ceilings were not known.
CREATE TABLE gl_unresolved_admissions_minute (
  tenant_id text NOT NULL,
  dimension text NOT NULL,
  cause text NOT NULL,
  bucket_start timestamptz NOT NULL,
  units bigint NOT NULL,
  messages bigint NOT NULL,
  PRIMARY KEY (tenant_id, dimension, cause, bucket_start)
);
CREATE INDEX gl_unresolved_admissions_minute_start ON gl_unresolved_admissions_minute (bucket_start);
CREATE TABLE gl_unresolved_admissions_hour (LIKE gl_unresolved_admissions_minute INCLUDING ALL);
CREATE TABLE gl_unresolved_admissions_day (LIKE gl_unresolved_admissions_minute INCLUDING ALL);

-- AI inference spend per tenant: the tokens the provider reported, and how many requests reported them.
CREATE TABLE gl_inference_spend_minute (
  tenant_id text NOT NULL,
  bucket_start timestamptz NOT NULL,
  input_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  requests bigint NOT NULL,
  PRIMARY KEY (tenant_id, bucket_start)
);
CREATE INDEX gl_inference_spend_minute_start ON gl_inference_spend_minute (bucket_start);
CREATE TABLE gl_inference_spend_hour (LIKE gl_inference_spend_minute INCLUDING ALL);
CREATE TABLE gl_inference_spend_day (LIKE gl_inference_spend_minute INCLUDING ALL);
