// One step of a projection: read the next page of the projection's own event types after the checkpoint
// (the store filters them where they are stored), apply them, and move the checkpoint as far as the read
// looked (ReadAllPage.through: past events of other types too, up to the readable head when the page is
// short), all in one transaction. So a projection with nothing pending still moves to the head, and no
// read ever wades through other types' events.
import type { Db } from '../db/db.ts';
import { sameCheckpoint, type EventStore, type RecordedEvent } from './eventStore.ts';
import type { Projection } from './projection.ts';
import { loadCheckpoint, storeCheckpoint, type StoredCheckpoint } from './checkpoints.ts';

export type PageOutcome =
  /** The page was applied and the checkpoint moved past it; `short` when the read found fewer events than it
   *  asked for (it reached the head as it then stood). */
  | { status: 'applied'; applied: readonly RecordedEvent[]; short: boolean; checkpoint: StoredCheckpoint }
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
  const maxCount = Math.min(pageSize, projection.pageSize ?? pageSize);
  const { events: applied, through } = await store.readAllPage(checkpoint.position, maxCount, {
    types: projection.eventTypes,
    dataAsJson: projection.readsDataAsJson,
  });
  if (applied.length === 0 && sameCheckpoint(through, checkpoint.position)) return { status: 'caught-up', checkpoint };
  const next: StoredCheckpoint = { ...checkpoint, position: through };
  try {
    await db.transaction(async (tx) => {
      // Checkpoint first: its row lock makes a competing runner wait here, before it applies anything.
      if (!(await storeCheckpoint(tx, checkpoint, next))) throw new CheckpointMoved();
      if (projection.applyPage) {
        if (applied.length > 0) await projection.applyPage(applied, tx);
      } else {
        for (const event of applied) await projection.apply(event, tx);
      }
    });
  } catch (error) {
    if (!(error instanceof CheckpointMoved)) throw error;
    const moved = await loadCheckpoint(db, projection.name);
    if (!moved) throw new Error(`checkpoint of projection ${projection.name} was deleted while it ran`, { cause: error });
    return { status: 'moved', checkpoint: moved };
  }
  if (applied.length > 0) projection.afterCommit?.(applied);
  return { status: 'applied', applied, short: applied.length < maxCount, checkpoint: next };
}
