// A projection's checkpoint lives in gl_checkpoints and is only ever moved by compare-and-set: the UPDATE
// names the values it read. Two runners of one projection (two processes) may read the same page; the
// second one's UPDATE finds the row changed (it waits on the first one's row lock, then re-checks), updates
// nothing, and rolls its read-model writes back. So no event is applied twice.
import type { Queryable } from '../db/db.ts';
import type { Checkpoint } from './eventStore.ts';

export interface StoredCheckpoint {
  projection: string;
  version: number;
  position: Checkpoint;
}

interface CheckpointRow {
  version: number;
  commit_position: bigint | null;
  prepare_position: bigint | null;
}

export async function loadCheckpoint(db: Queryable, projection: string): Promise<StoredCheckpoint | undefined> {
  const result = await db.query<CheckpointRow>(
    'SELECT version, commit_position, prepare_position FROM gl_checkpoints WHERE projection = $1',
    [projection],
  );
  const row = result.rows[0];
  if (!row) return undefined;
  const position: Checkpoint =
    row.commit_position === null || row.prepare_position === null
      ? 'start'
      : { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) };
  return { projection, version: row.version, position };
}

/** Loads the checkpoint, creating it at the start of the ledger for `version` when there is none yet. */
export async function loadOrCreateCheckpoint(db: Queryable, projection: string, version: number): Promise<StoredCheckpoint> {
  const existing = await loadCheckpoint(db, projection);
  if (existing) return existing;
  await db.query(
    'INSERT INTO gl_checkpoints (projection, version) VALUES ($1, $2) ON CONFLICT (projection) DO NOTHING',
    [projection, version],
  );
  const created = await loadCheckpoint(db, projection);
  if (!created) throw new Error(`checkpoint of projection ${projection} vanished right after it was created`);
  return created;
}

/** Moves the checkpoint from `expected` to `next`; false when another runner moved it first. */
export async function storeCheckpoint(tx: Queryable, expected: StoredCheckpoint, next: StoredCheckpoint): Promise<boolean> {
  const from = positionParams(expected.position);
  const to = positionParams(next.position);
  const result = await tx.query(
    `UPDATE gl_checkpoints
        SET version = $5, commit_position = $6, prepare_position = $7, updated_at = now()
      WHERE projection = $1 AND version = $2
        AND commit_position IS NOT DISTINCT FROM $3::bigint
        AND prepare_position IS NOT DISTINCT FROM $4::bigint`,
    [expected.projection, expected.version, from.commit, from.prepare, next.version, to.commit, to.prepare],
  );
  return result.rowCount === 1;
}

/** Puts the checkpoint at the start of the ledger for `version`, whatever it was (an operator's rebuild). */
export async function resetCheckpoint(tx: Queryable, projection: string, version: number): Promise<void> {
  await tx.query(
    `INSERT INTO gl_checkpoints (projection, version) VALUES ($1, $2)
     ON CONFLICT (projection) DO UPDATE
       SET version = EXCLUDED.version, commit_position = NULL, prepare_position = NULL, updated_at = now()`,
    [projection, version],
  );
}

// Sent as text: both drivers then agree, and no 64-bit value passes through a JavaScript number.
function positionParams(position: Checkpoint): { commit: string | null; prepare: string | null } {
  if (position === 'start') return { commit: null, prepare: null };
  return { commit: position.commit.toString(), prepare: position.prepare.toString() };
}
