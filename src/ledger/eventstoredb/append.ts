// Appending to EventStoreDB for the port: the same input checks as the PostgreSQL adapter, the expected
// revision and its failure in the port's words, retries of the same prepared batch after a transient
// failure, and the position of the last event appended.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ANY,
  BACKWARDS,
  END,
  FORWARDS,
  NO_STREAM,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  jsonEvent,
  type AppendExpectedRevision,
  type JSONEventData,
  type JSONType,
} from '@eventstore/db-client';
import { WrongExpectedRevision, type AppendResult, type ExpectedRevision, type NewEvent, type Position } from '../eventStore.ts';
import { prepareBatch } from '../postgres/prepareBatch.ts';
import { isTransient, toPortError, type EsdbClient } from './client.ts';
import { NO_POSITION, records, toRecordedEvent } from './read.ts';

export interface AppendRetry {
  /** Attempts of one append in all, the first included (at least 1). */
  attempts: number;
  /** The wait before the second attempt; each later wait is four times the one before, with jitter. */
  firstDelayMs: number;
}

export const DEFAULT_APPEND_RETRY: AppendRetry = { attempts: 4, firstDelayMs: 100 };

/** How far back an append whose every attempt failed looks for its batch, with 'any' or 'stream_exists'. */
const STORED_LOOKBACK = 1_000;

/**
 * Appends a batch; the server writes it atomically and checks the expected revision.
 *
 * Idempotent ids (see NewEvent.id): with an explicit expected revision the server compares the batch with
 * the events stored after that revision, however old; with 'any' or 'stream_exists' it looks its first id
 * up in a bounded cache of recent writes only, and a batch whose first id it no longer holds is written whole.
 *
 * Copies of one batch sent before the first is indexed are dropped by the server ("idempotent, not ready"),
 * and their callers see the deadline pass; an unreachable leader looks alike. So the same prepared batch
 * (same ids, same expected revision) is sent again a bounded number of times with backoff; once the first
 * copy is indexed the server answers a copy with what is stored. When every attempt failed, what is stored
 * is asked directly: the batch found in the stream is the answer, else the last failure is.
 */
export async function appendToStream(
  client: EsdbClient,
  stream: string,
  events: readonly NewEvent[],
  expectedRevision: ExpectedRevision = 'any',
  retry: AppendRetry = DEFAULT_APPEND_RETRY,
): Promise<AppendResult> {
  // The same checks as the PostgreSQL adapter, so both refuse the same malformed input (InvalidAppend)
  // and a ledger moves between them unchanged.
  const batch = prepareBatch(stream, events);
  const toWrite = batch.ids.map((id, i) =>
    jsonEvent({
      id,
      type: batch.types[i]!,
      data: JSON.parse(batch.data[i]!) as JSONType,
      metadata: JSON.parse(batch.metadata[i]!) as JSONType,
    }),
  );
  const expected = toEsdbExpectedRevision(expectedRevision);
  let lastFailure: unknown;
  for (let attempt = 1; attempt <= Math.max(1, retry.attempts); attempt++) {
    if (attempt > 1) await sleep(retry.firstDelayMs * 4 ** (attempt - 2) * (0.5 + Math.random()));
    try {
      const written = await client.appendToStream(stream, toWrite, { expectedRevision: expected });
      const position = written.position && written.position.commit !== NO_POSITION ? written.position : undefined;
      return {
        nextRevision: written.nextExpectedRevision,
        // Filled in by servers from 20.6 on for a write; where the server gives none (an older server, or an
        // answer from the idempotency check on some versions) it is read back by revision.
        position: position ? { commit: position.commit, prepare: position.prepare } : await positionOf(client, stream, written.nextExpectedRevision),
      };
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) throw toWrongExpectedRevision(error, stream, expectedRevision);
      if (!isTransient(error)) throw toPortError(error, stream);
      lastFailure = error;
    }
  }
  const stored = await findStored(client, stream, toWrite, expectedRevision).catch(() => undefined);
  if (stored) return stored;
  throw lastFailure;
}

export function toEsdbExpectedRevision(expected: ExpectedRevision): AppendExpectedRevision {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      return expected;
  }
}

/**
 * The client's WrongExpectedVersionError as ours. `expected` is what the caller asked for: the server's own
 * report of it is the wire encoding (-1, -2, ...) on some paths. A current revision the server does not give
 * means the stream does not exist.
 */
export function toWrongExpectedRevision(error: WrongExpectedVersionError, stream: string, expected: ExpectedRevision): WrongExpectedRevision {
  const actual = typeof error.actualVersion === 'bigint' ? error.actualVersion : 'no_stream';
  return new WrongExpectedRevision(stream, expected, actual);
}

// The port promises the last event's own position (the stored one for a retry); read back by revision.
async function positionOf(client: EsdbClient, stream: string, revision: bigint): Promise<Position> {
  for await (const resolved of records(client.readStream(stream, { fromRevision: revision, direction: FORWARDS, maxCount: 1 }))) {
    if (resolved.event) return toRecordedEvent(resolved.event).position;
  }
  throw new Error(`EventStoreDB: revision ${revision} of ${stream} was appended but cannot be read back`);
}

/**
 * The batch as stored, when it is: exactly at the revisions after an explicit expected revision, or (with
 * 'any' or 'stream_exists') among the last STORED_LOOKBACK events, its ids in order and without a gap.
 */
async function findStored(client: EsdbClient, stream: string, batch: readonly JSONEventData[], expected: ExpectedRevision): Promise<AppendResult | undefined> {
  const ids = batch.map((each) => each.id);
  const explicit = expected === 'no_stream' ? -1n : typeof expected === 'bigint' ? expected : undefined;
  const read =
    explicit === undefined
      ? client.readStream(stream, { fromRevision: END, direction: BACKWARDS, maxCount: STORED_LOOKBACK })
      : client.readStream(stream, { fromRevision: explicit + 1n, direction: FORWARDS, maxCount: ids.length });
  const found: { id: string; revision: bigint; position: Position }[] = [];
  try {
    for await (const resolved of records(read)) {
      if (resolved.event) found.push({ id: resolved.event.id.toLowerCase(), revision: resolved.event.revision, position: toRecordedEvent(resolved.event).position });
    }
  } catch (error) {
    if (error instanceof StreamNotFoundError) return undefined;
    throw error;
  }
  if (explicit === undefined) found.reverse();
  const start = found.findIndex((each) => each.id === ids[0]);
  if (start < 0 || found.length - start < ids.length) return undefined;
  for (let i = 0; i < ids.length; i++) if (found[start + i]!.id !== ids[i]) return undefined;
  const last = found[start + ids.length - 1]!;
  return { nextRevision: last.revision, position: last.position };
}
