// `governance projections rebuild [name]`: empty the read model, reset the checkpoint, replay the ledger.
// A runner of the same projection that is running meanwhile (the service) is not disturbed: its next
// compare-and-set fails, it reloads the reset checkpoint and the two share the replay page by page.
import { setTimeout as delay } from 'node:timers/promises';
import type { Db } from '../db/db.ts';
import { comparePositions, type Checkpoint, type EventStore, type Position } from './eventStore.ts';
import type { Projection } from './projection.ts';
import { loadCheckpoint, resetCheckpoint } from './checkpoints.ts';
import { projectNextPage } from './projectPage.ts';
import { truncateReadModel } from './resetProjection.ts';

export interface RebuildProgress {
  /** Ledger events of the projection's types replayed so far. */
  done: number;
  total: number;
  ratePerSecond: number;
  etaSeconds: number;
}

export interface RebuildResult {
  projection: string;
  eventsRead: number;
  eventsApplied: number;
  seconds: number;
}

export interface RebuildOptions {
  onProgress?: (progress: RebuildProgress) => void;
  pageSize?: number;
}

export async function rebuildProjection(
  db: Db,
  store: EventStore,
  projection: Projection,
  { onProgress, pageSize = 1_000 }: RebuildOptions = {},
): Promise<RebuildResult> {
  const startedAt = performance.now();
  // The replay ends at the head as of now, not at the first empty read: events committed before the
  // rebuild may still be held back from readers for a moment (PostgreSQL, behind an older open transaction).
  const head = await store.headPosition();
  let total = await countLedgerEvents(store, projection.eventTypes, pageSize);
  await emptyForReplay(db, store, projection);
  let checkpoint = await loadCheckpoint(db, projection.name);
  if (!checkpoint) throw new Error(`checkpoint of projection ${projection.name} vanished during the rebuild`);
  let done = 0;
  let applied = 0;
  const report = () => {
    const seconds = (performance.now() - startedAt) / 1_000;
    const ratePerSecond = seconds > 0 ? done / seconds : 0;
    total = Math.max(total, done);
    onProgress?.({ done, total, ratePerSecond, etaSeconds: ratePerSecond > 0 ? (total - done) / ratePerSecond : 0 });
  };
  report();
  for (;;) {
    const outcome = await projectNextPage(db, store, projection, checkpoint, pageSize);
    if (outcome.status === 'caught-up') {
      if (reached(outcome.checkpoint.position, head)) break;
      await delay(HELD_BACK_POLL_MS);
      continue;
    }
    if (outcome.checkpoint.version !== projection.version) {
      throw new Error(`projection ${projection.name} was reset to version ${outcome.checkpoint.version} during the rebuild`);
    }
    if (outcome.status === 'applied') {
      done += outcome.applied.length + outcome.quarantined.length;
      applied += outcome.applied.length;
      if (outcome.applied.length > 0) await projection.afterPages?.(db);
    }
    checkpoint = outcome.checkpoint;
    report();
  }
  return { projection: projection.name, eventsRead: done, eventsApplied: applied, seconds: (performance.now() - startedAt) / 1_000 };
}

/**
 * A rebuild's first step alone: the read model emptied and the checkpoint at the start, in one transaction. A
 * runner started after it (the service's, in its thread) replays the ledger as it would after an outage.
 */
export async function emptyForReplay(db: Db, store: EventStore, projection: Projection): Promise<void> {
  const ledger = await store.identity();
  await db.transaction(async (tx) => {
    // The rebuilt checkpoint is this ledger's, whichever ledger the old one was taken on.
    await resetCheckpoint(tx, projection.name, projection.version, ledger);
    await truncateReadModel(tx, projection);
  });
}

const HELD_BACK_POLL_MS = 25;

function reached(checkpoint: Checkpoint, head: Position | undefined): boolean {
  if (head === undefined) return true;
  return checkpoint !== 'start' && comparePositions(checkpoint, head) >= 0;
}

// The port has no count; one read through the projection's events gives the progress bar its total. It
// costs a read of what the replay reads anyway, without the writes, so it is small beside the replay itself.
async function countLedgerEvents(store: EventStore, types: readonly string[], pageSize: number): Promise<number> {
  let count = 0;
  let after: Parameters<EventStore['readAll']>[0] = 'start';
  for (;;) {
    const page = await store.readAll(after, pageSize, { types });
    const last = page.at(-1);
    if (!last) return count;
    count += page.length;
    after = last.position;
  }
}
