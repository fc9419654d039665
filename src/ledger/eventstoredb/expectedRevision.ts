import { ANY, NO_STREAM, STREAM_EXISTS, type AppendExpectedRevision, type WrongExpectedVersionError } from '@eventstore/db-client';
import { WrongExpectedRevision, type ExpectedRevision } from '../eventStore.ts';

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
