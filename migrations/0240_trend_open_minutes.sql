-- The admission trends' newest minutes (src/metrics/trends/openMinutes.ts). Their projection holds the minutes
-- still being added to and writes them whole each page as packed rows: per minute, one row per shard of tenants
-- (an md5 of the tenant ID; the family's openShards, 64), each column an array with an element per row of the minute
-- table it stands for. A minute is written to gl_admission_trends_minute once, a few shards a page once it is
-- past, each shard's packed row deleted in the same transaction. Updating a row per active tenant and minute every 2 s cost PostgreSQL
-- 0.8-1.2 s a page at 100,000 active tenants; rewriting the same rows packed, about a tenth of that.
-- Reads add them to the minute table (bucketRows); a read of one tenant reads its shard only.
CREATE TABLE gl_admission_trends_open (
  minute_start bigint NOT NULL,
  shard integer NOT NULL,
  tenant_id text[] NOT NULL,
  dimension text[] NOT NULL,
  allowance text[] NOT NULL,
  admitted_units bigint[] NOT NULL,
  admitted_messages bigint[] NOT NULL,
  shed_units bigint[] NOT NULL,
  shed_messages bigint[] NOT NULL,
  rejected_units bigint[] NOT NULL,
  rejected_messages bigint[] NOT NULL,
  unauthenticated_units bigint[] NOT NULL,
  unauthenticated_messages bigint[] NOT NULL,
  hits bigint[] NOT NULL,
  shadow_limited_units bigint[] NOT NULL,
  shadow_limited_messages bigint[] NOT NULL,
  quota_rejected_units bigint[] NOT NULL,
  quota_rejected_messages bigint[] NOT NULL,
  PRIMARY KEY (minute_start, shard)
);

-- Who wrote the packed rows last: a token per page. A projection that finds another token than the one it
-- wrote (another runner's page, its own page rolled back, a rebuild's truncation) reads them again before it
-- adds to them. A page locks this row first, so the pages of two runners never interleave.
CREATE TABLE gl_admission_trends_open_mark (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  token text NOT NULL
);
