// A projection's checkpoint lives in gl_checkpoints and is only ever moved by compare-and-set: the UPDATE
// names the values it read. Two runners of one projection (two processes) may read the same page; the
// second one's UPDATE finds the row changed (it waits on the first one's row lock, then re-checks), updates
// nothing, and rolls its read-model writes back. So no event is applied twice.
//
// A checkpoint also names the ledger it was taken on (migration 0090): a position means nothing in another
// ledger's order, so a runner checks the name before it reads (checkLedger) and refuses on a mismatch.
import type { Queryable } from '../db/db.ts';
import type { Checkpoint, LedgerIdentity } from './eventStore.ts';

export interface StoredCheckpoint {
  projection: string;
  version: number;
  position: Checkpoint;
  /** The ledger the position is in; undefined for a checkpoint at the start not yet claimed by any ledger. */
  ledger?: LedgerIdentity | undefined;
}

interface CheckpointRow {
  version: number;
  commit_position: bigint | null;
  prepare_position: bigint | null;
  ledger_kind: string | null;
  ledger_id: string | null;
}

/** The stored checkpoint was taken on another ledger than the one this process reads: rebuild to go on. */
export class CheckpointOfAnotherLedger extends Error {
  override readonly name = 'CheckpointOfAnotherLedger';
  constructor(
    readonly projection: string,
    readonly stored: LedgerIdentity | undefined,
    readonly current: LedgerIdentity,
  ) {
    super(
      `projection ${projection}: its checkpoint was taken on ${describeLedger(stored)}, but this service reads ${describeLedger(current)}; ` +
        `its read model and checkpoint belong to the other ledger. Rebuild it on this ledger: governance projections rebuild ${projection}`,
    );
  }
}

function describeLedger(ledger: LedgerIdentity | undefined): string {
  if (!ledger) return 'a ledger it does not name';
  return `the ${ledger.kind === 'postgres' ? 'PostgreSQL' : 'EventStoreDB'} ledger ${ledger.id}`;
}

export function sameLedger(a: LedgerIdentity | undefined, b: LedgerIdentity | undefined): boolean {
  return a !== undefined && b !== undefined && a.kind === b.kind && a.id === b.id;
}

export async function loadCheckpoint(db: Queryable, projection: string): Promise<StoredCheckpoint | undefined> {
  const result = await db.query<CheckpointRow>(
    'SELECT version, commit_position, prepare_position, ledger_kind, ledger_id FROM gl_checkpoints WHERE projection = $1',
    [projection],
  );
  const row = result.rows[0];
  if (!row) return undefined;
  const position: Checkpoint =
    row.commit_position === null || row.prepare_position === null
      ? 'start'
      : { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) };
  const kind = row.ledger_kind;
  const ledger: LedgerIdentity | undefined = kind === 'postgres' || kind === 'eventstoredb' ? { kind, id: row.ledger_id ?? '' } : undefined;
  return { projection, version: row.version, position, ledger };
}

/**
 * The checkpoint, once it is known to be in `ledger`: a checkpoint at the start that names no ledger yet is
 * claimed for it; one of another ledger (or a position naming none) is CheckpointOfAnotherLedger.
 */
export async function checkLedger(db: Queryable, stored: StoredCheckpoint, ledger: LedgerIdentity): Promise<StoredCheckpoint> {
  if (sameLedger(stored.ledger, ledger)) return stored;
  if (stored.ledger === undefined && stored.position === 'start') {
    await db.query(
      `UPDATE gl_checkpoints SET ledger_kind = $2, ledger_id = $3
        WHERE projection = $1 AND ledger_kind IS NULL AND commit_position IS NULL`,
      [stored.projection, ledger.kind, ledger.id],
    );
    const claimed = await loadCheckpoint(db, stored.projection);
    if (claimed && sameLedger(claimed.ledger, ledger)) return claimed;
    throw new CheckpointOfAnotherLedger(stored.projection, claimed?.ledger, ledger);
  }
  throw new CheckpointOfAnotherLedger(stored.projection, stored.ledger, ledger);
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

/**
 * Puts the checkpoint at the start of `ledger` for `version`, whatever it was and whichever ledger it named
 * (an operator's rebuild).
 */
export async function resetCheckpoint(tx: Queryable, projection: string, version: number, ledger: LedgerIdentity): Promise<void> {
  await tx.query(
    `INSERT INTO gl_checkpoints (projection, version, ledger_kind, ledger_id) VALUES ($1, $2, $3, $4)
     ON CONFLICT (projection) DO UPDATE
       SET version = EXCLUDED.version, commit_position = NULL, prepare_position = NULL,
           ledger_kind = EXCLUDED.ledger_kind, ledger_id = EXCLUDED.ledger_id, updated_at = now()`,
    [projection, version, ledger.kind, ledger.id],
  );
}

// Sent as text: both drivers then agree, and no 64-bit value passes through a JavaScript number.
function positionParams(position: Checkpoint): { commit: string | null; prepare: string | null } {
  if (position === 'start') return { commit: null, prepare: null };
  return { commit: position.commit.toString(), prepare: position.prepare.toString() };
}
