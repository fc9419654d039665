import type { Db, Tx } from '../db/db.ts';
import type { RecordedEvent } from './eventStore.ts';

/** apply's answer for an event it will not apply, and why (a sentence an operator reads in the quarantine). */
export interface Refused {
  refused: string;
}

/** applyPage's answer for each event of the page it will not apply. */
export interface Refusal {
  event: RecordedEvent;
  reason: string;
}

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
   * A page of at most `reads` reads of `pageSize` events, read on while each came full and the events read so
   * far, as JSON text (readsDataAsJson), hold fewer than `bytes`: for a projection of sums catching up over
   * small events (summary references), which writes each row once per page whatever the number of events
   * merged into it, so a page of minutes of traffic writes a tenant's minute row once instead of once per
   * few seconds. Live pages (one short read) are unchanged.
   */
  catchUp?: { reads: number; bytes: number };
  /**
   * Live events are applied at most this often (ms): events that arrive meanwhile wait and go in one page.
   * For a projection of sums, where a page costs one write per row whatever the number of events merged
   * into it: at 50,000 active tenants, a write per row per second was more than the database could do.
   * The read model then lags by up to this much more; waitForCaughtUp is never held back by it.
   */
  livePaceMs?: number;
  /**
   * How far behind (beyond its pace) the projection may be before /readyz calls it behind, when more than the
   * service's bound (GOVERNANCE_READY_MAX_LAG_SECONDS): for a read model whose readers read what it has not
   * applied from the ledger, so its lag never makes an answer stale, only slower. Readiness then tells a stuck
   * projection, not a few seconds of lag (projectionReadiness.ts).
   */
  readyLagSeconds?: number;
  /**
   * Run in a worker (projectionWorker.ts), its nice value on Linux (0, the default, is the admitting thread's; 19
   * the lowest): a child process' whole session's, a thread's own. For a projection whose pages may wait for a
   * core (its readers lose nothing by its lag: readyLagSeconds), so that on a few busy cores they wait and
   * admissions do not.
   */
  threadNice?: number;
  /**
   * Its pages are read with ReadAllOptions.dataAsJson: where the store holds text, each event comes with its
   * data as JSON text (RecordedEvent.dataJson) for the projection to parse when it comes to it. For large
   * events (admission summaries, thousands of rows each): a page of them parsed at once was most of what the
   * garbage collector had to move at 50,000 active tenants, in the process that admits.
   */
  readsDataAsJson?: boolean;
  /**
   * Applies one event; or answers `{ refused: reason }` for an event outside the bounds the projection
   * documents (one whose application would cost time or memory without bound), having applied nothing of it:
   * the runner sets it aside in the quarantine (quarantine.ts) in the same transaction and goes on.
   */
  apply(event: RecordedEvent, tx: Tx): Promise<void | Refused>;
  /**
   * When present, the runner gives it each page of events (in ledger order) instead of calling apply per
   * event. It must leave the read model as applying them one by one would; a projection of sums uses it to
   * merge a page's increments into one write per row instead of one per event. The events it refuses (as
   * apply does) are answered with their reasons; nothing of them may have been applied.
   */
  applyPage?(events: readonly RecordedEvent[], tx: Tx): Promise<void | readonly Refusal[]>;
  /** Called once a batch has committed, with the events it applied (not those it set aside), as read (e.g. to publish them to subscribers). */
  afterCommit?(events: readonly RecordedEvent[]): void;
  /**
   * Work that follows committed pages, in transactions of its own: a trend projection rolls its minutes up into
   * hours and days there (src/metrics/trends/upsertRollups.ts), so a live page does not wait for it. The runner
   * starts it after each page that applied events, one run at a time (a page committed meanwhile gets one more run
   * after it), without holding the next page back: what must not run at once, the projection serializes itself (a
   * lock both take). A fault is reported as a page's is, and the next page runs it again. waitForCaughtUp resolves
   * once it has ended; a rebuild runs it after each page. It must leave what reads answer unchanged.
   */
  afterPages?(db: Db): Promise<void>;
}
