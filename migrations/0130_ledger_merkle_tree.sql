-- The ledger's Merkle tree (RFC 9162; src/ledger/verifiable/README.md, docs/verifiable-ledger.md): one leaf per
-- event in the global order (tx_id, global_position), kept by a follower of that order after the events
-- commit, so an append does no hashing and takes no extra lock.

-- Leaf i is the i-th event of the global order. Its position and id tie it to the event; `summary_day` is
-- the UTC day of an admission summary (stream governance-admissions), whose event may later leave the
-- database with its archived day (gl_ledger_archives) while its leaf stays.
CREATE TABLE gl_merkle_leaves (
  leaf_index bigint PRIMARY KEY,
  event_id uuid NOT NULL UNIQUE,
  tx_id xid8 NOT NULL,
  global_position bigint NOT NULL,
  summary_day date,
  hash bytea NOT NULL
);

-- Every complete subtree above the leaves: level L, index i covers leaves [i * 2^L, (i + 1) * 2^L). About one
-- node per leaf; a proof or a root reads O(log n) of them.
CREATE TABLE gl_merkle_nodes (
  level smallint NOT NULL,
  node_index bigint NOT NULL,
  hash bytea NOT NULL,
  PRIMARY KEY (level, node_index)
);

-- Every signed checkpoint (C2SP tlog-checkpoint as a C2SP signed-note), kept for good. `delivered_at`: when
-- GOVERNANCE_CHECKPOINT_COMMAND last took it (NULL: not yet, or no command).
CREATE TABLE gl_merkle_checkpoints (
  tree_size bigint PRIMARY KEY,
  root_hash bytea NOT NULL,
  note text NOT NULL,
  verifier_key text NOT NULL,
  signed_at timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz
);
