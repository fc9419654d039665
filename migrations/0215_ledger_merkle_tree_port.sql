-- The ledger's Merkle tree when the ledger is read through the EventStore port (EVENTSTORE_URL: EventStoreDB /
-- KurrentDB; src/ledger/verifiable/portTree.ts). The tree is kept beside the read models, in the tables of
-- migration 0130: leaf i is the i-th ledger event of $all in commit order.

-- A leaf's position is the port's: on the PostgreSQL ledger the transaction id and global_position, on
-- EventStoreDB the $all commit and prepare positions. `recorded_at` is filled for a tree kept through the
-- port, whose events are not in this database: an export by instant finds its first leaf with it.
COMMENT ON COLUMN gl_merkle_leaves.tx_id IS 'The event''s position, first part: PostgreSQL ledger: its transaction id; EventStoreDB: its $all commit position.';
COMMENT ON COLUMN gl_merkle_leaves.global_position IS 'The event''s position, second part: PostgreSQL ledger: global_position; EventStoreDB: its $all prepare position.';
ALTER TABLE gl_merkle_leaves ADD COLUMN recorded_at timestamptz;

-- Read models keep an event's position; an auditor's answer names the event at it (eventRefs.ts). On
-- EventStoreDB only the tree knows which event that is. Partial: the PostgreSQL ledger's tree pays nothing.
CREATE INDEX gl_merkle_leaves_port_position ON gl_merkle_leaves (tx_id, global_position) WHERE recorded_at IS NOT NULL;
