-- Events a projection set aside instead of applying (src/ledger/quarantine.ts): one it refused as outside its
-- documented bounds, one whose application failed alone with a fault that is not the database's, or one that
-- ended or stalled its worker thread alone. The checkpoint moved past it in the same transaction as the row was
-- written, so the rest of the ledger is applied and nothing stored can hold a read model, or the service, back.
-- A rebuild of the projection empties its rows here with its read model (the replay quarantines them again).
CREATE TABLE gl_projection_quarantine (
  projection text NOT NULL,
  event_id text NOT NULL,
  -- The event's place in the ledger's global order (PostgreSQL: tx_id and global_position; EventStoreDB: commit
  -- and prepare positions), as the checkpoint names it.
  commit_position bigint NOT NULL,
  prepare_position bigint NOT NULL,
  stream_id text NOT NULL,
  event_type text NOT NULL,
  reason text NOT NULL,
  quarantined_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (projection, event_id)
);
CREATE INDEX gl_projection_quarantine_order ON gl_projection_quarantine (commit_position, prepare_position);
