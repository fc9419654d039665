-- The admission trend upsert adds to count columns. With those columns in the primary key (0031's INCLUDE)
-- every upsert changed an indexed column, so none could be a HOT update: each wrote a new index entry and
-- 1.5-1.9 KB of WAL, and at 10,000 active tenants the trend projection fell behind for good. The keys are
-- the grouping columns only again, so an upsert that finds room on its page is a HOT update. Free room is
-- kept on every page (fillfactor) because the rows written last, the current minute's, hour's and day's,
-- are the ones updated again. Trend reads give up index-only scans for this; they read few rows per tenant.
ALTER TABLE gl_admission_trends_minute DROP CONSTRAINT gl_admission_trends_minute_pkey,
  ADD PRIMARY KEY (tenant_id, dimension, bucket_start, allowance);
ALTER TABLE gl_admission_trends_hour DROP CONSTRAINT gl_admission_trends_hour_pkey,
  ADD PRIMARY KEY (tenant_id, dimension, bucket_start, allowance);
ALTER TABLE gl_admission_trends_day DROP CONSTRAINT gl_admission_trends_day_pkey,
  ADD PRIMARY KEY (tenant_id, dimension, bucket_start, allowance);
ALTER TABLE gl_admission_trends_minute SET (fillfactor = 80);
ALTER TABLE gl_admission_trends_hour SET (fillfactor = 80);
ALTER TABLE gl_admission_trends_day SET (fillfactor = 80);
ALTER TABLE gl_unresolved_admissions_minute SET (fillfactor = 80);
ALTER TABLE gl_unresolved_admissions_hour SET (fillfactor = 80);
ALTER TABLE gl_unresolved_admissions_day SET (fillfactor = 80);
