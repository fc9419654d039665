-- The ledger: one append-only table for every event of every stream.
CREATE TABLE gl_events (
  global_position bigserial PRIMARY KEY,
  -- The appending transaction. Readers order by (tx_id, global_position) and read only below the
  -- snapshot's xmin: a bigserial alone is assigned before commit, so a reader ordering by it could pass a
  -- position whose transaction commits later and skip that event forever.
  tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  event_id uuid NOT NULL UNIQUE,
  stream text NOT NULL,
  revision bigint NOT NULL,
  type text NOT NULL,
  data jsonb NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  recorded_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (stream, revision)
);
CREATE INDEX gl_events_global_order ON gl_events (tx_id, global_position);
CREATE INDEX gl_events_type ON gl_events (type, tx_id, global_position);

-- Ledger rows are never changed or removed.
CREATE FUNCTION gl_events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the ledger is append-only: % on gl_events refused', TG_OP;
END $$;
CREATE TRIGGER gl_events_append_only BEFORE UPDATE OR DELETE ON gl_events
  FOR EACH ROW EXECUTE FUNCTION gl_events_are_append_only();
CREATE TRIGGER gl_events_no_truncate BEFORE TRUNCATE ON gl_events
  FOR EACH STATEMENT EXECUTE FUNCTION gl_events_are_append_only();

-- Projection checkpoints, written in the same transaction as the projection's read-model writes.
CREATE TABLE gl_checkpoints (
  projection text PRIMARY KEY,
  version integer NOT NULL,
  commit_position bigint,
  prepare_position bigint,
  updated_at timestamptz NOT NULL DEFAULT now()
);
