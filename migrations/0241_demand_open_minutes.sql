-- The limit preview's newest minutes of demand (src/limit-preview/openDemand.ts): a page of the admission-demand
-- projection packs its seconds of the minutes still open into one row per (minute, dimension, shard of tenants)
-- instead of appending to a row per tenant, and the page that finds a minute past closes it: its rows are
-- deleted and their records appended to gl_demand_seconds, one write per tenant and minute. `records` holds per
-- (tenant, allowance) the two keys and that minute's records (openDemand.ts says how). `id` orders a minute's
-- rows as they were written. Readers add the rows of their range and shards to gl_demand_seconds' (a few hundred
-- rows at most: the open minutes only).
CREATE TABLE gl_demand_open (
  id bigserial PRIMARY KEY,
  minute_start bigint NOT NULL,
  dimension text NOT NULL,
  shard smallint NOT NULL,
  records bytea NOT NULL
);
CREATE INDEX gl_demand_open_minute ON gl_demand_open (minute_start, dimension, shard);
