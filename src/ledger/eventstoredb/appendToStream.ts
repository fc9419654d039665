import { FORWARDS, WrongExpectedVersionError, jsonEvent, type EventStoreDBClient, type JSONType } from '@eventstore/db-client';
import type { AppendResult, ExpectedRevision, NewEvent } from '../eventStore.ts';
import { prepareBatch } from '../postgres/prepareBatch.ts';
import { toEsdbExpectedRevision, toWrongExpectedRevision } from './expectedRevision.ts';
import { toRecordedEvent } from './recordedEvent.ts';

/**
 * Appends a batch; the server writes it atomically and checks the expected revision.
 *
 * Idempotent ids differ from the PostgreSQL adapter: EventStoreDB deduplicates an event id only within its
 * idempotency window (the ids it still holds in its recent-write cache, and with an exact expected revision
 * the events at that revision), where PostgreSQL's unique index remembers every id forever. An id appended
 * again long after, with expected revision 'any', can be stored twice here.
 */
export async function appendToStream(
  client: EventStoreDBClient,
  stream: string,
  events: readonly NewEvent[],
  expectedRevision: ExpectedRevision = 'any',
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
  let written;
  try {
    written = await client.appendToStream(stream, toWrite, { expectedRevision: toEsdbExpectedRevision(expectedRevision) });
  } catch (error) {
    if (error instanceof WrongExpectedVersionError) throw toWrongExpectedRevision(error, stream, expectedRevision);
    throw error;
  }
  return { nextRevision: written.nextExpectedRevision, position: await positionOf(client, stream, written.nextExpectedRevision) };
}

// The append reports one position for the whole write, and for an idempotent retry none at all; the port
// promises the last event's own position (the stored one for a retry), so it is read back by revision.
async function positionOf(client: EventStoreDBClient, stream: string, revision: bigint) {
  for await (const resolved of client.readStream(stream, { fromRevision: revision, direction: FORWARDS, maxCount: 1 })) {
    if (resolved.event) return toRecordedEvent(resolved.event).position;
  }
  throw new Error(`EventStoreDB: revision ${revision} of ${stream} was appended but cannot be read back`);
}
