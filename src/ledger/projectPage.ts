// One step of a projection: read the next page of the projection's own event types after the checkpoint
// (the store filters them where they are stored), apply them, and move the checkpoint as far as the read
// looked (ReadAllPage.through: past events of other types too, up to the readable head when the page is
// short), all in one transaction. So a projection with nothing pending still moves to the head, and no
// read ever wades through other types' events.
//
// No stored event may stop a projection (quarantine.ts). Events the projection refuses are set aside in the
// page's transaction. When applying the page throws a fault that is not the database's (isTransientFault), the
// page is rolled back and its events are applied alone, each in a transaction of its own that moves the
// checkpoint to it; one that fails alone is tried once more, then set aside with the fault as its reason, in
// the transaction that moves the checkpoint past it. A fault of the database is thrown as before: the runner
// tries again later, and nothing is set aside for it.
import type { Db, Tx } from '../db/db.ts';
import { sameCheckpoint, type Checkpoint, type EventStore, type RecordedEvent } from './eventStore.ts';
import type { Projection, Refusal } from './projection.ts';
import { loadCheckpoint, storeCheckpoint, type StoredCheckpoint } from './checkpoints.ts';
import { eventRef, faultReason, isTransientFault, quarantineEvents, type EventRef } from './quarantine.ts';

export type PageOutcome =
  /** The page was applied (its events applied or set aside) and the checkpoint moved past it; `short` when the
   *  read found fewer events than it asked for (it reached the head as it then stood). */
  | { status: 'applied'; applied: readonly RecordedEvent[]; quarantined: readonly Refusal[]; short: boolean; checkpoint: StoredCheckpoint }
  /** Nothing after the checkpoint: caught up with the ledger as of this read. */
  | { status: 'caught-up'; checkpoint: StoredCheckpoint }
  /** Another runner moved the checkpoint first; nothing was applied, continue from its checkpoint. */
  | { status: 'moved'; checkpoint: StoredCheckpoint };

/** What is about to be applied, in one transaction from `from`: a page, or (`alone`) one event of a page that failed. */
export interface ApplyAttempt {
  from: StoredCheckpoint;
  events: readonly EventRef[];
  alone: boolean;
}

export interface PageOptions {
  /** Apply the page's events one at a time from the start (after a thread ended while it applied this page). */
  alone?: boolean;
  /** Told before each transaction that applies events, and (undefined) once it has ended. */
  onApplying?: (attempt: ApplyAttempt | undefined) => void;
  /** Told of each fault the projection's code threw that is not the database's (the page, or an event alone, is tried again). */
  onApplyFault?: (fault: unknown) => void;
}

/** How many times an event is applied alone before it is set aside. */
const ALONE_ATTEMPTS = 2;

class CheckpointMoved extends Error {}

/** The projection's own code threw, with a fault that is not the database's: the events, not the storage, are to blame. */
class ApplyFailed extends Error {
  constructor(readonly fault: unknown) {
    super(faultReason(fault), { cause: fault });
  }
}

export async function projectNextPage(
  db: Db,
  store: EventStore,
  projection: Projection,
  checkpoint: StoredCheckpoint,
  pageSize: number,
  options: PageOptions = {},
): Promise<PageOutcome> {
  const maxCount = Math.min(pageSize, projection.pageSize ?? pageSize);
  const { events, through, short } = await readPage(store, projection, checkpoint, maxCount);
  if (events.length === 0 && sameCheckpoint(through, checkpoint.position)) return { status: 'caught-up', checkpoint };
  const next: StoredCheckpoint = { ...checkpoint, position: through };
  if (options.alone && events.length > 0) return projectAlone(db, projection, checkpoint, events, short, options);
  let quarantined: readonly Refusal[];
  try {
    quarantined = await applyInTransaction(db, projection, checkpoint, next, events, false, options);
  } catch (error) {
    if (error instanceof ApplyFailed) {
      options.onApplyFault?.(error.fault);
      return projectAlone(db, projection, checkpoint, events, short, options);
    }
    if (error instanceof CheckpointMoved) return moved(db, projection, error);
    throw error;
  }
  const applied = quarantined.length === 0 ? events : events.filter((event) => !quarantined.some((refusal) => refusal.event === event));
  if (applied.length > 0) projection.afterCommit?.(applied);
  return { status: 'applied', applied, quarantined, short, checkpoint: next };
}

/**
 * The next page: one read of `maxCount` events; for a projection with `catchUpReads` (Projection), further reads
 * while each came full and the events read so far, as JSON text, hold fewer than `catchUpBytes`. Only events
 * read as text count (their size is known without serializing them); others end the page at one read.
 * `short`: the last read found fewer events than it asked for (it reached the head as it then stood).
 */
async function readPage(
  store: EventStore,
  projection: Projection,
  checkpoint: StoredCheckpoint,
  maxCount: number,
): Promise<{ events: RecordedEvent[]; through: Checkpoint; short: boolean }> {
  const options = { types: projection.eventTypes, dataAsJson: projection.readsDataAsJson };
  let { events, through } = await store.readAllPage(checkpoint.position, maxCount, options);
  let last = events.length;
  const { reads = 1, bytes: maxBytes = 0 } = projection.catchUp ?? {};
  let bytes = textBytes(events);
  for (let read = 1; read < reads && last === maxCount && bytes < maxBytes; read++) {
    const more = await store.readAllPage(through, maxCount, options);
    events = events.concat(more.events);
    through = more.through;
    last = more.events.length;
    bytes += textBytes(more.events);
  }
  return { events, through, short: last < maxCount };
}

/** The events' data as JSON text, in bytes (UTF-16 code units), or Infinity when one of them was not read as text. */
function textBytes(events: readonly RecordedEvent[]): number {
  let bytes = 0;
  for (const event of events) {
    if (event.dataJson === undefined) return Infinity;
    bytes += event.dataJson.length;
  }
  return bytes;
}

/**
 * The page's events one at a time, each in its own transaction that moves the checkpoint to it; an event that
 * fails alone ALONE_ATTEMPTS times is set aside. The checkpoint ends on the last event (the next read goes on
 * from there).
 */
async function projectAlone(
  db: Db,
  projection: Projection,
  checkpoint: StoredCheckpoint,
  events: readonly RecordedEvent[],
  short: boolean,
  options: PageOptions,
): Promise<PageOutcome> {
  const applied: RecordedEvent[] = [];
  const quarantined: Refusal[] = [];
  let at = checkpoint;
  for (const event of events) {
    const next: StoredCheckpoint = { ...at, position: event.position };
    let fault: unknown;
    let refused: readonly Refusal[] = [];
    for (let attempt = 1; attempt <= ALONE_ATTEMPTS; attempt++) {
      try {
        refused = await applyInTransaction(db, projection, at, next, [event], true, options);
        fault = undefined;
        break;
      } catch (error) {
        if (error instanceof CheckpointMoved) return moved(db, projection, error);
        if (!(error instanceof ApplyFailed)) throw error;
        fault = error.fault;
        options.onApplyFault?.(fault);
      }
    }
    if (fault !== undefined) {
      const refusal = { event, reason: `its application failed ${ALONE_ATTEMPTS} times alone: ${faultReason(fault)}` };
      const stored = await db.transaction(async (tx) => {
        if (!(await storeCheckpoint(tx, at, next))) return false;
        await quarantineEvents(tx, projection.name, [{ event: eventRef(event), reason: refusal.reason }]);
        return true;
      });
      if (!stored) return moved(db, projection, new CheckpointMoved());
      refused = [refusal];
    }
    if (refused.length > 0) quarantined.push(...refused);
    else {
      applied.push(event);
      projection.afterCommit?.([event]);
    }
    at = next;
  }
  return { status: 'applied', applied, quarantined, short, checkpoint: at };
}

/**
 * Moves the checkpoint from `from` to `next`, applies the events and sets aside those the projection refused,
 * in one transaction. Throws CheckpointMoved when another runner moved the checkpoint first, ApplyFailed when
 * the projection's code threw a fault that is not the database's; a fault of the database as it is.
 */
async function applyInTransaction(
  db: Db,
  projection: Projection,
  from: StoredCheckpoint,
  next: StoredCheckpoint,
  events: readonly RecordedEvent[],
  alone: boolean,
  { onApplying }: PageOptions,
): Promise<readonly Refusal[]> {
  if (events.length > 0) onApplying?.({ from, events: events.map(eventRef), alone });
  try {
    return await db.transaction(async (tx) => {
      // A competing runner waits here, before it applies anything: on the projection's advisory lock, which takes
      // no transaction ID. The checkpoint's row is written last. On PostgreSQL every reader of the ledger waits
      // for the transactions older than what it reads (postgres/read.ts), and a row lock is a write: taken first,
      // it held them back for the whole page, the projection's own work in JavaScript included (the demand's
      // pages, niced, 2-4 s at 50,000 active tenants: the trends read 7-8 s behind). Now they wait only for the
      // page's writes.
      await tx.query(PAGE_LOCK_SQL, [projection.name]);
      const stored = await loadCheckpoint(tx, projection.name);
      if (stored === undefined || stored.version !== from.version || !sameCheckpoint(stored.position, from.position)) throw new CheckpointMoved();
      const refused = events.length === 0 ? [] : await applyEvents(projection, events, tx);
      if (refused.length > 0) {
        await quarantineEvents(
          tx,
          projection.name,
          refused.map((refusal) => ({ event: eventRef(refusal.event), reason: refusal.reason })),
        );
      }
      if (!(await storeCheckpoint(tx, from, next))) throw new CheckpointMoved();
      return refused;
    });
  } finally {
    if (events.length > 0) onApplying?.(undefined);
  }
}

/**
 * A projection's pages one at a time: the lock of its name in this schema (an advisory lock is the database's,
 * and a schema is a deployment of its own), which takes no transaction ID.
 */
const PAGE_LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtext('governance-ledger projection page'), hashtext(current_schema() || ' ' || $1))";

async function applyEvents(projection: Projection, events: readonly RecordedEvent[], tx: Tx): Promise<readonly Refusal[]> {
  try {
    if (projection.applyPage) return (await projection.applyPage(events, tx)) ?? [];
    const refused: Refusal[] = [];
    for (const event of events) {
      const outcome = await projection.apply(event, tx);
      if (outcome) refused.push({ event, reason: outcome.refused });
    }
    return refused;
  } catch (error) {
    throw isTransientFault(error) ? error : new ApplyFailed(error);
  }
}

async function moved(db: Db, projection: Projection, error: CheckpointMoved): Promise<PageOutcome> {
  const checkpoint = await loadCheckpoint(db, projection.name);
  if (!checkpoint) throw new Error(`checkpoint of projection ${projection.name} was deleted while it ran`, { cause: error });
  return { status: 'moved', checkpoint };
}
