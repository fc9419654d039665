// The client as the adapter sees it: the calls it makes, and what the client's errors mean for the port.
import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  DeadlineExceededError,
  EventStoreDBClient,
  MaxAppendSizeExceededError,
  StreamDeletedError,
  UnavailableError,
} from '@eventstore/db-client';
import { AppendTooLarge, StreamDeleted } from '../eventStore.ts';

/**
 * The part of the client the adapter uses: the boundary its unit tests fake with the client's own results
 * and error classes (test/unit/ledger/esdbAdapter.test.ts).
 */
export type EsdbClient = Pick<EventStoreDBClient, 'appendToStream' | 'readStream' | 'readAll' | 'subscribeToAll' | 'dispose'>;

export function connect(connectionString: string): EsdbClient {
  return EventStoreDBClient.connectionString(connectionString);
}

/**
 * A failure after which the same request may succeed: the deadline passed (the server dropped a copy of a
 * batch whose first write it had not indexed yet, "idempotent, not ready", or was slow) or the server could
 * not be reached. The batch append reports a refused connection as a bare gRPC status, without its class.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof DeadlineExceededError || error instanceof UnavailableError) return true;
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return code === GrpcStatus.DEADLINE_EXCEEDED || code === GrpcStatus.UNAVAILABLE;
}

/** The client's errors that have a port error of their own, as that error; any other error as it is. */
export function toPortError(error: unknown, stream: string): unknown {
  if (error instanceof StreamDeletedError) return new StreamDeleted(stream);
  if (error instanceof MaxAppendSizeExceededError) {
    return new AppendTooLarge(stream, Number.isFinite(error.maxAppendSize) ? error.maxAppendSize : undefined);
  }
  return error;
}
