// Publishes accepted batches to NATS JetStream and waits for the stream's acknowledgement, so a 202 means
// the readings are stored in the stream, not merely written to a socket. One message per request, on
// `<subjectPrefix>.<tenant>`; the request ID doubles as the JetStream message ID, so a retried publish of
// the same request inside the duplicate window is stored once.
import { connect, headers, JSONCodec, type JetStreamClient, type NatsConnection } from 'nats';
import type { AcceptedBatch, ReadingSink } from './sink.ts';

export interface NatsSinkOptions {
  url: string;
  /** Stream that captures `<subjectPrefix>.>`; created when missing. */
  stream: string;
  subjectPrefix: string;
}

export const DEFAULT_INGEST_STREAM = { stream: 'GOVERNANCE_INGEST', subjectPrefix: 'governance.ingest' };

export async function createNatsSink(options: NatsSinkOptions): Promise<ReadingSink & { connection: NatsConnection }> {
  const connection = await connect({ servers: options.url, name: 'governance-ingest' });
  try {
    await ensureStream(connection, options);
  } catch (error) {
    await connection.close();
    throw error;
  }
  const jetstream: JetStreamClient = connection.jetstream();
  const codec = JSONCodec<AcceptedBatch>();
  return {
    connection,
    async publish(batch) {
      const meta = headers();
      meta.set('Governance-Tenant', batch.tenantId);
      meta.set('X-Request-ID', batch.requestId);
      await jetstream.publish(subjectFor(options.subjectPrefix, batch.tenantId), codec.encode(batch), {
        msgID: batch.requestId,
        headers: meta,
      });
    },
    async close() {
      await connection.drain();
    },
  };
}

async function ensureStream(connection: NatsConnection, options: NatsSinkOptions): Promise<void> {
  const manager = await connection.jetstreamManager();
  const subjects = [`${options.subjectPrefix}.>`];
  try {
    await manager.streams.info(options.stream);
  } catch (error) {
    if ((error as { api_error?: { err_code?: number } }).api_error?.err_code !== STREAM_NOT_FOUND) throw error;
    await manager.streams.add({ name: options.stream, subjects });
  }
}

// JetStream's API error code for "stream not found"; any other failure is a fault to report, not to paper over.
const STREAM_NOT_FOUND = 10059;

/**
 * A subject token may not hold '.', '*', '>' or whitespace; tenant names are percent-encoded into one token
 * so no name can reach another tenant's subject or a wildcard.
 */
export function subjectFor(prefix: string, tenantId: string): string {
  return `${prefix}.${tenantId.replace(/[.*>%\s]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)}`;
}
