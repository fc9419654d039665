import type { Queryable } from '../../db/db.ts';
import type { Checkpoint, RecordedEvent, Subscription } from '../eventStore.ts';
import type { AppendSignal } from './appendSignal.ts';
import { hasUnreadEvents, readAll } from './read.ts';

export interface SubscribeTiming {
  /** Events read per catch-up query. */
  pageSize: number;
  /** How long an idle subscriber waits for a NOTIFY before it reads anyway (the fallback if one is lost). */
  pollIntervalMs: number;
  /** How soon it reads again while committed events wait behind an older open transaction. */
  heldBackPollMs: number;
}

/**
 * Catches up from `after` page by page through readAll, then follows live: it sleeps until an append's
 * NOTIFY or the poll interval, whichever comes first, and reads again. Because every read is a readAll,
 * the subscriber sees exactly readAll's order and never passes an open transaction's events.
 */
export function subscribe(
  db: Queryable,
  signal: AppendSignal,
  after: Checkpoint,
  types: readonly string[] | undefined,
  timing: SubscribeTiming,
): Subscription {
  let closed = false;
  let woken = false;
  let wake: (() => void) | undefined;
  const nudge = () => {
    woken = true;
    wake?.();
  };
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      if (closed || woken) return resolve();
      const done = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wake = done;
    });

  async function* follow(): AsyncGenerator<RecordedEvent> {
    // Listen before the first read, so an append committed during catch-up still wakes us.
    const stopListening = await signal.listen(nudge);
    let checkpoint = after;
    try {
      while (!closed) {
        woken = false;
        const page = await readAll(db, checkpoint, timing.pageSize, types);
        for (const event of page) {
          if (closed) return;
          yield event;
          checkpoint = event.position;
        }
        if (page.length === timing.pageSize || closed) continue;
        const heldBack = await hasUnreadEvents(db, checkpoint, types);
        await pause(heldBack ? timing.heldBackPollMs : timing.pollIntervalMs);
      }
    } finally {
      stopListening();
    }
  }

  const events = follow();
  return {
    [Symbol.asyncIterator]: () => events,
    async close() {
      closed = true;
      wake?.();
      await events.return(undefined);
    },
  };
}
