// The EventStore port. Two adapters implement it (postgres/ runs on PGlite too, eventstoredb/), and one
// contract suite (test/integration/ledger/eventStore.contract.ts) proves they behave the same.

/** A position in the global order: compare `commit` first, then `prepare`. */
export interface Position {
  /** PostgreSQL: the appending transaction's xid8. EventStoreDB: the commit position. */
  commit: bigint;
  /** PostgreSQL: the row's global_position. EventStoreDB: the prepare position. */
  prepare: bigint;
}

/** Where a reader starts: after a position, or from the very beginning. */
export type Checkpoint = Position | 'start';

export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | bigint;

export interface EventMetadata {
  /** Who caused it: a person's or service's authenticated identity. */
  actor?: string;
  /** Why, where a person acted. */
  reason?: string;
  /** When it happened (ISO 8601). The store adds when it was recorded. */
  occurredAt?: string;
  correlationId?: string;
  [key: string]: unknown;
}

export interface NewEvent<Type extends string = string, Data = unknown> {
  /**
   * A uuid, generated when absent. What both adapters keep: a batch appended again with the same ids at the
   * same explicit expected revision (a bigint or 'no_stream') is answered as stored and not stored twice,
   * however long after. With 'any' or 'stream_exists' EventStoreDB only checks a bounded cache of recently
   * written ids (best effort), where PostgreSQL always checks: a caller that retries and must not count
   * twice appends at an explicit revision.
   */
  id?: string;
  type: Type;
  data: Data;
  /**
   * `data` already serialized, exactly as JSON.stringify(data) writes it, by a writer that serialized it
   * anyway (the ledger Recorder sizes its events so): a store that sends JSON text (PostgreSQL) sends this
   * instead of serializing `data` again.
   */
  dataJson?: string;
  metadata?: EventMetadata;
}

export interface RecordedEvent<Type extends string = string, Data = unknown> {
  id: string;
  stream: string;
  /** 0-based position within its stream. */
  revision: bigint;
  position: Position;
  type: Type;
  data: Data;
  /** The data as JSON text, when read with ReadAllOptions.dataAsJson from a store that holds text; `data` is null then. */
  dataJson?: string;
  metadata: EventMetadata;
  recordedAt: Date;
}

/** An event's data: parsed from its JSON text when it was read as text (ReadAllOptions.dataAsJson). */
export function eventData(event: RecordedEvent): unknown {
  return event.dataJson !== undefined ? JSON.parse(event.dataJson) : event.data;
}

export interface AppendResult {
  /** The revision of the last event now in the stream. */
  nextRevision: bigint;
  /** The global position of the last event appended (or of the already-stored duplicate). */
  position: Position;
}

export type Direction = 'forwards' | 'backwards';

export interface ReadStreamOptions {
  fromRevision?: bigint | 'start' | 'end';
  direction?: Direction;
  maxCount?: number;
}

export interface ReadAllOptions {
  /** Only events of these types (every type when absent). Both adapters filter where the events are stored. */
  types?: readonly string[];
  /**
   * Each event's data as the JSON text the store holds (RecordedEvent.dataJson, `data` null), where it holds
   * text (PostgreSQL); a store that does not sends `data` as usual. For a reader of large events
   * (Projection.readsDataAsJson): it parses each event when it comes to it, so a page's worth of parsed data is
   * never alive at once.
   */
  dataAsJson?: boolean;
}

/** A page of readAllPage: the events, and how far the read looked. */
export interface ReadAllPage {
  events: RecordedEvent[];
  /**
   * At or past the last event returned: every event of the asked types up to `through` is in `events` or
   * before `after`, and no such event can ever be appended before it (on PostgreSQL it is below every open
   * transaction). A reader checkpoints here, so a projection with nothing of its own to apply still moves
   * its checkpoint to the head.
   */
  through: Checkpoint;
}

export interface Subscription extends AsyncIterable<RecordedEvent> {
  /** Stops the subscription; the iterator ends. */
  close(): Promise<void>;
}

/**
 * Which ledger a store reads: its kind and an id of its own that stays the same for the life of its data.
 * Projection checkpoints name the ledger they were taken on (checkpoints.ts).
 */
export interface LedgerIdentity {
  kind: 'postgres' | 'eventstoredb';
  id: string;
}

export interface EventStore {
  /**
   * The largest append this store takes, in serialized bytes (appendSize.ts counts them), when it has a limit
   * of its own: EventStoreDB refuses appends over 1 MiB. Absent: any size (PostgreSQL), so a writer may send a
   * whole batch in one append. Events are kept under MAX_APPEND_BYTES on every store all the same.
   */
  readonly appendLimitBytes?: number;
  append(stream: string, events: readonly NewEvent[], options?: { expectedRevision?: ExpectedRevision }): Promise<AppendResult>;
  /** Events of one stream; an absent stream reads as empty. */
  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** Up to maxCount events after `after`, in the one global order every reader sees. */
  readAll(after: Checkpoint, maxCount: number, options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** readAll, and how far it looked (see ReadAllPage.through): a projection's read. */
  readAllPage(after: Checkpoint, maxCount: number, options?: ReadAllOptions): Promise<ReadAllPage>;
  /**
   * The first committed event after `after` (of `types`), including one readAll does not show yet because
   * an older transaction is still open (PostgreSQL). A projection's lag is its age. Its cost does not grow
   * with the ledger or with the distance from `after`.
   */
  firstPending(after: Checkpoint, options?: ReadAllOptions): Promise<RecordedEvent | undefined>;
  /** Catches up from `after`, then follows live appends, in readAll's order. */
  subscribe(after: Checkpoint, options?: { types?: readonly string[] }): Subscription;
  /**
   * The position of the last event committed so far (system events excluded), or undefined while the
   * ledger is empty. Unlike readAll it is not held back by open transactions: a reader whose checkpoint
   * reaches it has seen everything committed before the call (the projection runner's waitForCaughtUp).
   */
  headPosition(): Promise<Position | undefined>;
  /** The ledger's identity (made on first use where the ledger has none yet). */
  identity(): Promise<LedgerIdentity>;
  close(): Promise<void>;
}

/** Optimistic concurrency failed: the stream was not at the revision the caller expected. */
export class WrongExpectedRevision extends Error {
  override readonly name = 'WrongExpectedRevision';
  constructor(
    readonly stream: string,
    readonly expected: ExpectedRevision,
    readonly actual: bigint | 'no_stream',
  ) {
    super(`stream ${stream}: expected revision ${String(expected)}, actual ${String(actual)}`);
  }
}

/**
 * The ledger refused a summary reference (catalog/summaryRefs.ts) whose source it does not hold in the UTC day
 * the reference would be recorded in: a midnight of the ledger's clock passed since the Recorder planned it
 * (migrations/0250_ledger_summary_refs_same_day.sql). Nothing of the append was stored.
 */
export class ReferenceOutsideDay extends Error {
  override readonly name = 'ReferenceOutsideDay';
  constructor(
    readonly stream: string,
    cause: unknown,
  ) {
    super(`stream ${stream}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** The later of two checkpoints. */
export function laterCheckpoint(a: Checkpoint, b: Checkpoint): Checkpoint {
  if (a === 'start') return b;
  if (b === 'start') return a;
  return comparePositions(a, b) >= 0 ? a : b;
}

export function sameCheckpoint(a: Checkpoint, b: Checkpoint): boolean {
  if (a === 'start' || b === 'start') return a === b;
  return comparePositions(a, b) === 0;
}

export function comparePositions(a: Position, b: Position): number {
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

/** Opaque, stable text form of a position (GraphQL cursors, checkpoint columns). */
export function formatPosition(position: Position): string {
  return `${position.commit}:${position.prepare}`;
}

export function parsePosition(text: string): Position | undefined {
  const match = /^(\d+):(\d+)$/.exec(text);
  if (!match) return undefined;
  return { commit: BigInt(match[1]!), prepare: BigInt(match[2]!) };
}

/**
 * The server refused an append as larger than it accepts (EventStoreDB up to 24.10 and KurrentDB 25.0: 1 MiB
 * by default); nothing was stored. Callers keep each append under MAX_APPEND_BYTES (appendSize.ts).
 */
export class AppendTooLarge extends Error {
  override readonly name = 'AppendTooLarge';
  constructor(
    readonly stream: string,
    /** What the server said it accepts, in bytes, when it said so. */
    readonly maxBytes: number | undefined,
  ) {
    super(`append to stream ${JSON.stringify(stream)} refused: larger than the server accepts${maxBytes === undefined ? '' : ` (${maxBytes} bytes)`}`);
  }
}

/**
 * The stream was deleted for good (an EventStoreDB tombstone, made outside this service): it can be neither
 * read nor appended to again. The PostgreSQL ledger never deletes a stream.
 */
export class StreamDeleted extends Error {
  override readonly name = 'StreamDeleted';
  constructor(readonly stream: string) {
    super(`stream ${JSON.stringify(stream)} was deleted for good and cannot be read or appended to`);
  }
}

/** An append refused before anything was stored: empty stream name, empty batch, malformed event. */
export class InvalidAppend extends Error {
  override readonly name = 'InvalidAppend';
  constructor(
    readonly stream: string,
    readonly reason: string,
  ) {
    super(`append to stream ${JSON.stringify(stream)} refused: ${reason}`);
  }
}
