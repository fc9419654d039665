import type { Tx } from '../db/db.ts';
import type { RecordedEvent } from './eventStore.ts';

/**
 * A read model kept in PostgreSQL/PGlite and built from the ledger. The runner applies each event of
 * `eventTypes` exactly once, in the ledger's global order, in the same transaction as the checkpoint.
 */
export interface Projection {
  /** Unique; the checkpoint's key. */
  name: string;
  /** Raise it when `apply` changes meaning: a runner that finds an older stored version rebuilds first. */
  version: number;
  eventTypes: readonly string[];
  /** The read-model tables this projection owns; a rebuild truncates them. */
  tables: readonly string[];
  /**
   * Events per page at most, below the runner's own page size: for a projection whose events are large
   * (admission summaries carry thousands of entries each), so that a page stays a bounded amount of work.
   */
  pageSize?: number;
  /**
   * Live events are applied at most this often (ms): events that arrive meanwhile wait and go in one page.
   * For a projection of sums, where a page costs one write per row whatever the number of events merged
   * into it: at 50,000 active tenants, a write per row per second was more than the database could do.
   * The read model then lags by up to this much more; waitForCaughtUp is never held back by it.
   */
  livePaceMs?: number;
  /**
   * Its pages are read with ReadAllOptions.dataAsJson: where the store holds text, each event comes with its
   * data as JSON text (RecordedEvent.dataJson) for the projection to parse when it comes to it. For large
   * events (admission summaries, thousands of rows each): a page of them parsed at once was most of what the
   * garbage collector had to move at 50,000 active tenants, in the process that admits.
   */
  readsDataAsJson?: boolean;
  apply(event: RecordedEvent, tx: Tx): Promise<void>;
  /**
   * When present, the runner gives it each page of events (in ledger order) instead of calling apply per
   * event. It must leave the read model as applying them one by one would; a projection of sums uses it to
   * merge a page's increments into one write per row instead of one per event.
   */
  applyPage?(events: readonly RecordedEvent[], tx: Tx): Promise<void>;
  /** Called once a batch has committed, with the events it applied (e.g. to publish them to subscribers), as read. */
  afterCommit?(events: readonly RecordedEvent[]): void;
}
