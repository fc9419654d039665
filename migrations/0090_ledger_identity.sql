-- Which ledger the projection checkpoints were taken on. A checkpoint is a position in one ledger's global
-- order; read on another ledger (EVENTSTORE_URL set on a database whose checkpoints came from the PostgreSQL
-- ledger, or another EventStoreDB cluster) it means nothing, so a runner refuses to start on a mismatch
-- and names the fix: rebuild.

-- The PostgreSQL ledger in this database names itself by one random id, made once.
CREATE TABLE gl_ledger_identity (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  id uuid NOT NULL DEFAULT gen_random_uuid()
);
INSERT INTO gl_ledger_identity DEFAULT VALUES;

-- 'postgres' or 'eventstoredb', and the ledger's own id. NULL: not yet named (a checkpoint at the start,
-- which any ledger may take).
ALTER TABLE gl_checkpoints ADD COLUMN ledger_kind text, ADD COLUMN ledger_id text;

-- Checkpoints from before this migration were taken on this database's own ledger: the EventStoreDB path
-- had not run anywhere yet.
UPDATE gl_checkpoints
   SET ledger_kind = 'postgres', ledger_id = (SELECT id::text FROM gl_ledger_identity)
 WHERE commit_position IS NOT NULL;
