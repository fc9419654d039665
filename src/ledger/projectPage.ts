// One step of a projection: read the next page of the ledger after the checkpoint, apply the events of the
// projection's types, and move the checkpoint past the whole page (other types included, so a caught-up
// check never has to wade through them again), all in one transaction.
import type { Db } from '../db/db.ts';
import type { EventStore, RecordedEvent } from './eventStore.ts';
import type { Projection } from './projection.ts';
import { loadCheckpoint, storeCheckpoint, type StoredCheckpoint } from './checkpoints.ts';

export type PageOutcome =
  /** The page was applied and the checkpoint moved past it. */
  | { status: 'applied'; read: number; applied: readonly RecordedEvent[]; checkpoint: StoredCheckpoint }
  /** Nothing after the checkpoint: caught up with the ledger as of this read. */
  | { status: 'caught-up'; checkpoint: StoredCheckpoint }
  /** Another runner moved the checkpoint first; nothing was applied, continue from its checkpoint. */
  | { status: 'moved'; checkpoint: StoredCheckpoint };

class CheckpointMoved extends Error {}

export async function projectNextPage(
  db: Db,
  store: EventStore,
  projection: Projection,
  checkpoint: StoredCheckpoint,
  pageSize: number,
): Promise<PageOutcome> {
  const page = await store.readAll(checkpoint.position, pageSize);
  const last = page.at(-1);
  if (!last) return { status: 'caught-up', checkpoint };

  const types = new Set(projection.eventTypes);
  const applied = page.filter((event) => types.has(event.type));
  const next: StoredCheckpoint = { ...checkpoint, position: last.position };
  try {
    await db.transaction(async (tx) => {
      // Checkpoint first: its row lock makes a competing runner wait here, before it applies anything.
      if (!(await storeCheckpoint(tx, checkpoint, next))) throw new CheckpointMoved();
      for (const event of applied) await projection.apply(event, tx);
    });
  } catch (error) {
    if (!(error instanceof CheckpointMoved)) throw error;
    const moved = await loadCheckpoint(db, projection.name);
    if (!moved) throw new Error(`checkpoint of projection ${projection.name} was deleted while it ran`, { cause: error });
    return { status: 'moved', checkpoint: moved };
  }
  if (applied.length > 0) projection.afterCommit?.(applied);
  return { status: 'applied', read: page.length, applied, checkpoint: next };
}
