-- The limit preview's read model (src/limit-preview, projections/admissionDemand.ts): the per-second demand
-- of every tenant, dimension and allowance, one row per minute. `seconds` holds the minute's recorded
-- seconds packed (src/limit-preview/demandSeconds.ts: per second its offset in the minute, units and
-- messages offered, and the part of them refused then); a page of the projection appends its seconds to the
-- row (bytea ||), so a row is written once per page, never rewritten whole by a reader.
--
-- The primary key leads with (dimension, tenant_id, minute_start): a preview reads a dimension's tenants over
-- a range, each one contiguous index range; the minute_start index serves a platform-wide preview and pruning.
CREATE TABLE gl_demand_seconds (
  dimension text NOT NULL,
  tenant_id text NOT NULL,
  minute_start bigint NOT NULL,
  allowance text NOT NULL,
  seconds bytea NOT NULL,
  PRIMARY KEY (dimension, tenant_id, minute_start, allowance)
);
CREATE INDEX gl_demand_seconds_minute ON gl_demand_seconds (minute_start);
