-- A tenant's trend rows are written as traffic arrives, interleaved with every other tenant's, so one
-- tenant's day of minutes lies on ~1,440 different heap pages: reading them cost ~60 ms on 10M rows. The
-- primary key now carries the columns trend reads sum, so those reads are index-only scans over a few
-- contiguous index pages. The price is that an upsert changes an indexed column and is never a HOT update;
-- B-tree bottom-up deletion (PostgreSQL 14+) keeps those versions from bloating the index.
ALTER TABLE gl_admission_trends_minute DROP CONSTRAINT gl_admission_trends_minute_pkey,
  ADD PRIMARY KEY (tenant_id, dimension, bucket_start, allowance) INCLUDE (admitted_units, shed_units, rejected_units, hits);
ALTER TABLE gl_admission_trends_hour DROP CONSTRAINT gl_admission_trends_hour_pkey,
  ADD PRIMARY KEY (tenant_id, dimension, bucket_start, allowance) INCLUDE (admitted_units, shed_units, rejected_units, hits);
ALTER TABLE gl_admission_trends_day DROP CONSTRAINT gl_admission_trends_day_pkey,
  ADD PRIMARY KEY (tenant_id, dimension, bucket_start, allowance) INCLUDE (admitted_units, shed_units, rejected_units, hits);
