-- Credentials the HTTP ingest front door checks after admission (X-Device-Key). Only a SHA-256 of each key
-- is kept: keys are 256-bit random values, so a fast hash is enough and a leaked table grants nothing.
CREATE TABLE gl_ingest_credentials (
  key_hash bytea PRIMARY KEY,
  tenant_id text NOT NULL,
  -- tenant: any device of the tenant, on /v1/ingest and /v1/integrations; device: one device, on /v1/ingest;
  -- integration: one named integration, on /v1/integrations.
  kind text NOT NULL CHECK (kind IN ('tenant', 'device', 'integration')),
  subject text,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  CHECK ((kind = 'tenant') = (subject IS NULL))
);
CREATE INDEX gl_ingest_credentials_tenant ON gl_ingest_credentials (tenant_id);
