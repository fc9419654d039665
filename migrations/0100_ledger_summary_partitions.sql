-- The ledger's admission summaries (stream governance-admissions: AdmissionsRecorded and
-- UnresolvedAdmissionsRecorded) are kept in daily partitions, so that days older than the retention can be
-- archived to files and dropped whole (src/ledger/retention/README.md). Every other stream (limit changes,
-- tenants, commands, inference spend, ...) is kept for good in gl_events_kept.
--
--   gl_events                         PARTITION BY LIST (stream)
--     gl_events_summaries             FOR VALUES IN ('governance-admissions'), PARTITION BY RANGE (recorded_at)
--       gl_events_summaries_YYYYMMDD  one UTC day each, made ahead of time (gl_create_summary_partition)
--       gl_events_summaries_default   the fallback of a day without a partition: an append never fails for it,
--                                     and what lands here is kept for good
--     gl_events_kept                  DEFAULT: every other stream, never dropped
--
-- The global order is unchanged: readers order by (tx_id, global_position) over the whole table, positions
-- still come from one sequence, and the held-back rule (tx_id below the snapshot's xmin) reads the same
-- columns. A partitioned table can only enforce uniqueness that includes its partition key, so the
-- uniqueness the ledger relies on lives on the partitions: gl_events_kept keeps UNIQUE (event_id) and
-- UNIQUE (stream, revision) exactly as before; summaries are appended under the stream's lock, which
-- numbers revisions, and with their ids looked up first (appendToStream), so each day partition only needs
-- plain indexes.

ALTER TABLE gl_events RENAME TO gl_events_before_partitions;
ALTER INDEX gl_events_global_order RENAME TO gl_events_before_partitions_global_order;
ALTER INDEX gl_events_type RENAME TO gl_events_before_partitions_type;
ALTER SEQUENCE gl_events_global_position_seq OWNED BY NONE;

CREATE TABLE gl_events (
  global_position bigint NOT NULL DEFAULT nextval('gl_events_global_position_seq'),
  tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  event_id uuid NOT NULL,
  stream text NOT NULL,
  revision bigint NOT NULL,
  type text NOT NULL,
  data jsonb NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  recorded_at timestamptz NOT NULL DEFAULT clock_timestamp()
) PARTITION BY LIST (stream);
ALTER SEQUENCE gl_events_global_position_seq OWNED BY gl_events.global_position;
CREATE INDEX gl_events_global_order ON gl_events (tx_id, global_position);
CREATE INDEX gl_events_type ON gl_events (type, tx_id, global_position);

CREATE TABLE gl_events_kept PARTITION OF gl_events DEFAULT;
ALTER TABLE gl_events_kept ADD CONSTRAINT gl_events_kept_pkey PRIMARY KEY (global_position),
  ADD CONSTRAINT gl_events_kept_event_id_key UNIQUE (event_id),
  ADD CONSTRAINT gl_events_kept_stream_revision_key UNIQUE (stream, revision);

CREATE TABLE gl_events_summaries PARTITION OF gl_events FOR VALUES IN ('governance-admissions')
  PARTITION BY RANGE (recorded_at);
-- Stored ids are looked up before an append; the stream's head is max(revision).
CREATE INDEX gl_events_summaries_event_id ON gl_events_summaries (event_id);
CREATE INDEX gl_events_summaries_revision ON gl_events_summaries (revision);
CREATE TABLE gl_events_summaries_default PARTITION OF gl_events_summaries DEFAULT;

-- Ledger rows are never changed or removed: row triggers are cloned onto every partition, TRUNCATE
-- triggers are not, so each table that can be truncated by name gets its own. A day partition leaves only
-- whole, by gl_ledger_archives' archive step (DETACH and DROP, which fire none of these).
CREATE TRIGGER gl_events_append_only BEFORE UPDATE OR DELETE ON gl_events
  FOR EACH ROW EXECUTE FUNCTION gl_events_are_append_only();
CREATE TRIGGER gl_events_no_truncate BEFORE TRUNCATE ON gl_events
  FOR EACH STATEMENT EXECUTE FUNCTION gl_events_are_append_only();
CREATE TRIGGER gl_events_no_truncate BEFORE TRUNCATE ON gl_events_kept
  FOR EACH STATEMENT EXECUTE FUNCTION gl_events_are_append_only();
CREATE TRIGGER gl_events_no_truncate BEFORE TRUNCATE ON gl_events_summaries
  FOR EACH STATEMENT EXECUTE FUNCTION gl_events_are_append_only();
CREATE TRIGGER gl_events_no_truncate BEFORE TRUNCATE ON gl_events_summaries_default
  FOR EACH STATEMENT EXECUTE FUNCTION gl_events_are_append_only();

-- Makes the partition of one UTC day, unless it exists; false when it did not make one. Made as a table of
-- its own and then attached: ATTACH takes only SHARE UPDATE EXCLUSIVE on gl_events_summaries, so appends
-- and reads go on meanwhile. A day whose summaries already went to the default partition (no partition
-- was made in time) gets none: those rows stay where they are, kept for good, and so does the rest of
-- that day. Callers queue on an advisory lock, so replicas making the same day do not collide.
CREATE FUNCTION gl_create_summary_partition(day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  name text := 'gl_events_summaries_' || to_char(day, 'YYYYMMDD');
  from_at timestamptz := day::timestamp AT TIME ZONE 'UTC';
  to_at timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('governance-ledger summary partitions'), hashtext(current_schema()));
  IF to_regclass(quote_ident(name)) IS NOT NULL THEN
    RETURN false;
  END IF;
  IF EXISTS (SELECT 1 FROM gl_events_summaries_default WHERE recorded_at >= from_at AND recorded_at < to_at) THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE %I (LIKE gl_events_summaries INCLUDING DEFAULTS)', name);
  EXECUTE format('ALTER TABLE gl_events_summaries ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', name, from_at, to_at);
  EXECUTE format('CREATE TRIGGER gl_events_no_truncate BEFORE TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION gl_events_are_append_only()', name);
  RETURN true;
END $$;

-- Every archived day: where its file went and what it held, so an operator (and a rebuild) can tell what
-- the ledger no longer holds. Kept for good.
CREATE TABLE gl_ledger_archives (
  day date PRIMARY KEY,
  stream text NOT NULL,
  file text NOT NULL,
  sha256 text NOT NULL,
  bytes bigint NOT NULL,
  events bigint NOT NULL,
  first_position text,
  last_position text,
  archived_at timestamptz NOT NULL DEFAULT now()
);

-- The events so far move over as they are: same positions, transactions and times. Summaries get the
-- partitions of their days first (older ones are archived by the next retention pass).
SELECT gl_create_summary_partition(d)
  FROM (SELECT DISTINCT (recorded_at AT TIME ZONE 'UTC')::date AS d
          FROM gl_events_before_partitions WHERE stream = 'governance-admissions') AS days;
-- Today and the coming week, so appends find their partition from the first one on.
SELECT gl_create_summary_partition((now() AT TIME ZONE 'UTC')::date + ahead) FROM generate_series(0, 7) AS ahead;
INSERT INTO gl_events (global_position, tx_id, event_id, stream, revision, type, data, metadata, recorded_at)
  SELECT global_position, tx_id, event_id, stream, revision, type, data, metadata, recorded_at
    FROM gl_events_before_partitions ORDER BY tx_id, global_position;
DROP TABLE gl_events_before_partitions;
