-- A summary reference (src/ledger/catalog/summaryRefs.ts: an AdmissionsRecorded event whose data names an
-- earlier event of the stream by "keysOf") is stored only in the UTC day partition that holds its source, so a
-- day's partition, and the archive file it becomes, holds the sources of all its references. The Recorder plans
-- references by its own clock, but recorded_at (clock_timestamp() when the row is inserted) picks the partition:
-- across a midnight of the database's clock, or after an outage, a reference planned in one day can be recorded
-- in the next. Before, the Recorder kept off midnights by estimated margins (a minute, five without an estimate),
-- writing every summary in full meanwhile; now the database refuses such a row and the Recorder writes its batch
-- in full once (src/ledger/ledgerRecorder.ts): one refused append a day instead of a window of full ones.
--
-- The row is refused with SQLSTATE GL001 (src/ledger/postgres/appendToStream.ts makes it ReferenceOutsideDay),
-- which aborts the statement: nothing of the append is stored. PostgreSQL logs it as an ERROR: expect one such
-- line a day from each replica's Recorder, just after the database's midnight. Also refused: a reference whose source the
-- ledger does not hold at all, or whose "keysOf" is not an event id. The look-up is by the source's id within
-- the new row's day, so it probes one partition's event_id index. A row trigger on gl_events_summaries is
-- cloned onto every day partition, the default one and those attached later (gl_create_summary_partition). In
-- a row-level BEFORE trigger, rows an earlier part of the same statement inserted are seen, so a source and
-- its references may come in one statement.
CREATE FUNCTION gl_summary_ref_in_source_day() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  source text := NEW.data->>'keysOf';
  day_from timestamptz := date_trunc('day', NEW.recorded_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
BEGIN
  IF source IS NULL OR source !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
    RAISE EXCEPTION 'a summary reference names no event id (keysOf %)', coalesce(source, 'absent')
      USING ERRCODE = 'GL001';
  END IF;
  IF NOT EXISTS (
    SELECT 1 FROM gl_events_summaries
     WHERE event_id = source::uuid AND recorded_at >= day_from AND recorded_at < day_from + interval '1 day'
  ) THEN
    RAISE EXCEPTION 'summary reference % names event %, which the ledger does not hold in the UTC day it is recorded in (%)',
      NEW.event_id, source, (NEW.recorded_at AT TIME ZONE 'UTC')::date
      USING ERRCODE = 'GL001';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER gl_summary_ref_in_source_day BEFORE INSERT ON gl_events_summaries
  FOR EACH ROW WHEN (NEW.type = 'AdmissionsRecorded' AND NEW.data ? 'keysOf')
  EXECUTE FUNCTION gl_summary_ref_in_source_day();
