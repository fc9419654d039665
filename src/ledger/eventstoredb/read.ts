// Reading EventStoreDB for the port: one stream, $all page by page, and the head of $all. Every read is a
// gRPC call that stays open until the server has sent all it was asked for or the call is cancelled, and
// leaving `for await` early only destroys the client's wrapper: `records` cancels the call itself.
import {
  BACKWARDS,
  END,
  FORWARDS,
  START,
  StreamDeletedError,
  StreamNotFoundError,
  type AllStreamRecordedEvent,
  type RecordedEvent as EsdbRecordedEvent,
  type StreamingRead,
} from '@eventstore/db-client';
import {
  StreamDeleted,
  comparePositions,
  type Checkpoint,
  type EventMetadata,
  type Position,
  type ReadStreamOptions,
  type RecordedEvent,
} from '../eventStore.ts';
import type { EsdbClient } from './client.ts';
import { canFilterOnServer, readAllFiltered } from './readAllFiltered.ts';

/**
 * The items of a read; a read left early (break, return, a throw in the loop body) is cancelled, so its call
 * does not stay open on the connection until the client is disposed.
 */
export async function* records<Item>(read: StreamingRead<Item>): AsyncGenerator<Item> {
  let ended = false;
  try {
    for await (const item of read) yield item as Item;
    ended = true;
  } finally {
    // A cancel after the end is harmless but costs a turn of the event loop, so only a read left early pays it.
    if (!ended) await read.cancel().catch(() => {});
  }
}

/** The adapter's own stream: the ledger's identity (eventStoreDb.ts), not a ledger event. */
export const IDENTITY_STREAM = 'governance-ledger-identity';

/**
 * EventStoreDB's own records ($metadata, $statsCollected, projection links "$>", $-prefixed streams) and the
 * adapter's identity stream share $all with ours; the ledger never shows them.
 */
export function isSystemEvent(event: { type: string; streamId: string }): boolean {
  return event.type.startsWith('$') || event.streamId.startsWith('$') || event.streamId === IDENTITY_STREAM;
}

// What servers before 22.6 put in a stream read's position fields, and what an append of nothing new
// reports: "no position" (2^64 - 1).
export const NO_POSITION = 18_446_744_073_709_551_615n;

export function toRecordedEvent(event: AllStreamRecordedEvent | EsdbRecordedEvent, position: Position | undefined = event.position): RecordedEvent {
  if (!position || position.commit === NO_POSITION) {
    // Stream reads carry the $all position only from server 22.6 on; older servers cannot give the port's positions.
    throw new Error(`EventStoreDB gave no position for event ${event.id} of ${event.streamId}: a server of version 22.6 or later is required`);
  }
  return {
    id: event.id,
    stream: event.streamId,
    revision: event.revision,
    position: { commit: position.commit, prepare: position.prepare },
    type: event.type,
    data: event.data,
    metadata: isMetadataObject(event.metadata) ? event.metadata : {},
    recordedAt: event.created,
  };
}

function isMetadataObject(metadata: unknown): metadata is EventMetadata {
  return typeof metadata === 'object' && metadata !== null && !Array.isArray(metadata) && !(metadata instanceof Uint8Array);
}

/** Events of one stream; an absent stream reads as empty, a deleted one (a tombstone) is StreamDeleted. */
export async function readStream(client: EsdbClient, stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
  const direction = options.direction ?? 'forwards';
  const fromRevision = options.fromRevision ?? (direction === 'forwards' ? 'start' : 'end');
  const events: RecordedEvent[] = [];
  try {
    const read = client.readStream(stream, {
      fromRevision: fromRevision === 'start' ? START : fromRevision === 'end' ? END : fromRevision,
      direction: direction === 'forwards' ? FORWARDS : BACKWARDS,
      ...(options.maxCount === undefined ? {} : { maxCount: options.maxCount }),
    });
    for await (const resolved of records(read)) {
      if (resolved.event) events.push(toRecordedEvent(resolved.event));
    }
  } catch (error) {
    // The port reads an absent stream as empty.
    if (error instanceof StreamNotFoundError) return [];
    if (error instanceof StreamDeletedError) throw new StreamDeleted(stream);
    throw error;
  }
  return events;
}

/**
 * Up to maxCount ledger events after `after`. Two differences from the port are bridged here: a forwards
 * read of $all from a position includes the event at that position (subscriptions exclude it), and $all
 * holds system events. Those are skipped and reading goes on, so a short page always means the end of $all:
 * a projection runner takes an empty page for "caught up". With `types` the server filters (readAllFiltered).
 */
export async function readAll(client: EsdbClient, after: Checkpoint, maxCount: number, types?: readonly string[]): Promise<RecordedEvent[]> {
  if (!Number.isInteger(maxCount) || maxCount < 0) throw new RangeError(`maxCount must be a whole number >= 0, got ${maxCount}`);
  const events: RecordedEvent[] = [];
  let from: Position | undefined = after === 'start' ? undefined : after;
  const onServer = types !== undefined && canFilterOnServer(client);
  // A client without the gRPC internals (the unit tests' fake) reads everything and filters here.
  const wanted = types !== undefined && !onServer ? new Set(types) : undefined;
  while (events.length < maxCount) {
    // One more than needed: the first record may be `from` itself.
    const want = maxCount - events.length + 1;
    let received = 0;
    const read = onServer
      ? readAllFiltered(client, from ?? 'start', want, types!)
      : client.readAll({ fromPosition: from ?? START, direction: FORWARDS, maxCount: want });
    for await (const resolved of records(read)) {
      received++;
      const event = resolved.event;
      if (!event || (from && comparePositions(event.position, from) <= 0)) continue;
      from = event.position;
      if (isSystemEvent(event) || (wanted && !wanted.has(event.type))) continue;
      events.push(toRecordedEvent(event));
      if (events.length === maxCount) break;
    }
    if (received < want) break;
  }
  return events;
}

/** Records asked for per backwards page when looking for the last ledger event. */
const HEAD_PAGE = 100;

/**
 * The position of the last ledger event in $all. EventStoreDB assigns positions at commit, so whatever this
 * returns is already readable: there is no held-back window as on PostgreSQL. Usually the very first record
 * is a ledger event and the read is cancelled there (this runs on every lag(), readiness check, metrics
 * scrape and waitForCaughtUp).
 */
export async function headPosition(client: EsdbClient): Promise<Position | undefined> {
  let from: Position | undefined;
  for (;;) {
    let received = 0;
    for await (const resolved of records(client.readAll({ fromPosition: from ?? END, direction: BACKWARDS, maxCount: HEAD_PAGE }))) {
      received++;
      const event = resolved.event;
      if (!event) continue;
      if (!isSystemEvent(event)) return event.position;
      from = event.position;
    }
    // A backwards read from a position excludes that position (the last record of the page before), so
    // pages never overlap and a short page means the start of $all was reached.
    if (received < HEAD_PAGE) return undefined;
  }
}
