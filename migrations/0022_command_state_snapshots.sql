-- Snapshots of a tenant's folded commands stream, for the stream-revision command backlog (the one
-- EVENTSTORE_URL uses; src/commands/stream). Only a cache: the state at a revision is a pure function of
-- the stream up to it, so a process starts from the snapshot and folds only the events after it, instead of
-- the tenant's whole history. last_event_id is the id of the event at `revision`: a snapshot whose event is
-- not the stream's (the ledger was replaced under the database) is discarded, never trusted.
CREATE TABLE gl_command_state_snapshots (
  tenant_id text PRIMARY KEY,
  revision bigint NOT NULL CHECK (revision >= 0),
  last_event_id text NOT NULL,
  state jsonb NOT NULL,
  taken_at timestamptz NOT NULL DEFAULT now()
);
