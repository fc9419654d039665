-- Control-plane read models, each kept by one projection (projections/) from the ledger and rebuilt from it.
-- Limit values are stored as given (jsonb); the governance cascade validates them when it resolves.

-- projections/tiers.ts
CREATE TABLE gl_tiers (
  tier_id text PRIMARY KEY,
  name text NOT NULL,
  default_model text,
  defined_at timestamptz NOT NULL
);
CREATE TABLE gl_tier_limits (
  tier_id text NOT NULL,
  dimension text NOT NULL,
  value jsonb NOT NULL,
  PRIMARY KEY (tier_id, dimension)
);

-- projections/tenants.ts
CREATE TABLE gl_tenants (
  tenant_id text PRIMARY KEY,
  tier_id text,
  model text,
  branding jsonb,
  api_over_limit_policy text,
  registered_at timestamptz NOT NULL
);
CREATE INDEX gl_tenants_tier ON gl_tenants (tier_id);

-- projections/tenantOverrides.ts: the override last set per tenant and dimension; one whose expires_at has
-- passed no longer applies, and readers compare it with the instant they ask about.
CREATE TABLE gl_tenant_overrides (
  tenant_id text NOT NULL,
  dimension text NOT NULL,
  value jsonb NOT NULL,
  expires_at timestamptz,
  reason text NOT NULL,
  actor text NOT NULL,
  set_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, dimension)
);

-- projections/platformSettings.ts
CREATE TABLE gl_platform_defaults (
  dimension text PRIMARY KEY,
  value jsonb NOT NULL
);
CREATE TABLE gl_platform_settings (
  key text PRIMARY KEY,
  value jsonb NOT NULL
);

-- projections/limitHistory.ts: every limit change (seq 0), and for an override that expires, its lapse at
-- expires_at (seq 1), removed again if the override is replaced or cleared before it lapses. Readers show a
-- lapse only once its instant has passed.
CREATE TABLE gl_limit_history (
  commit_position bigint NOT NULL,
  prepare_position bigint NOT NULL,
  seq smallint NOT NULL,
  at timestamptz NOT NULL,
  kind text NOT NULL,
  actor text NOT NULL,
  reason text,
  tenant_id text,
  tier_id text,
  previous_tier_id text,
  dimension text,
  previous jsonb,
  value jsonb,
  expires_at timestamptz,
  PRIMARY KEY (commit_position, prepare_position, seq)
);
CREATE INDEX gl_limit_history_order ON gl_limit_history (at DESC, commit_position DESC, prepare_position DESC, seq DESC);
CREATE INDEX gl_limit_history_tenant ON gl_limit_history (tenant_id, at DESC);
CREATE INDEX gl_limit_history_tier ON gl_limit_history (tier_id, at DESC);
