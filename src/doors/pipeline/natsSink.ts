// Publishes accepted batches to NATS JetStream and waits for the stream's acknowledgement, so a 202 means
// the readings are stored in the stream, not merely written to a socket. One message per batch, on
// `<subjectPrefix>.<tenant>`, with a JetStream message ID (Nats-Msg-Id) made of the route, the tenant and the
// batch's request ID: a batch published again with the same ID inside the stream's duplicate window (2 min
// by default) is stored once, and the sink answers 'duplicate' (README.md, "Exactly what is charged once").
//
// What the sink promises about NATS itself:
// - it reconnects forever: nats.js gives up after 10 attempts 2 s apart by default (a 20 s outage closed the
//   connection for good); here the client never gives up, and should the connection close anyway (the server
//   refused it, say) the sink makes a new one, with a growing pause, until close();
// - while it is not connected it refuses at once (a fault: the door answers 503 or tries again) rather than
//   letting each publish wait out its timeout, and `unavailable()` says so for /readyz;
// - a batch it can never take is an answer, not a fault: larger than the server's max_payload with its
//   envelope, or not serialisable (`refused`), so no door retries it forever.
import { connect, headers, type ConnectionOptions, type JetStreamClient, type NatsConnection } from 'nats';
import type { Logger } from '../../logger.ts';
import { DUPLICATE, STORED, type AcceptedBatch, type ReadingSink, type SinkAnswer } from './sink.ts';

export interface NatsSinkOptions {
  /** One server, or several comma-separated (a cluster's seed servers; the client learns the rest from them). */
  url: string;
  /**
   * Replicas of the stream when the sink creates it (GOVERNANCE_NATS_REPLICAS); by default 3 when the cluster
   * has at least 3 servers, else 1. A stream that exists is used as it is.
   */
  replicas?: number;
  /** Stream that captures `<subjectPrefix>.>`; created when missing. */
  stream: string;
  subjectPrefix: string;
  logger?: Logger;
  /** The client's pause between reconnect attempts (nats.js reconnectTimeWait); 2 s, as nats.js's default. */
  reconnectWaitMs?: number;
}

export const DEFAULT_INGEST_STREAM = { stream: 'GOVERNANCE_INGEST', subjectPrefix: 'governance.ingest' };

/**
 * What the sink adds around a body's readings, kept out of the server's max_payload for the door's body cap:
 * the headers (tenant, request ID and message ID: under 400 bytes, tenant IDs being at most 64 characters and
 * request IDs 128) and the batch's own fields (route, credential, times, units: under 600). What the readings
 * themselves grow by when written back (`1e2` becomes `100`) is not foreseeable: such a batch is refused as
 * too large when it is published.
 */
export const ENVELOPE_RESERVE_BYTES = 2048;

/** The longest pause between attempts to make a new connection after one closed. */
const LONGEST_RECONNECT_PAUSE_MS = 10_000;

export interface NatsSink extends ReadingSink {
  /** The connection in use now (a new one after the previous closed). */
  connection(): NatsConnection;
}

export async function createNatsSink(options: NatsSinkOptions): Promise<NatsSink> {
  const { logger } = options;
  const connectionOptions: ConnectionOptions = {
    servers: serversOf(options.url),
    name: 'governance-ingest',
    // Never give up: the default (10 attempts, 2 s apart) closed the connection after a 20 s outage.
    maxReconnectAttempts: -1,
    reconnectTimeWait: options.reconnectWaitMs ?? 2_000,
    // A server that stops answering without closing the socket is found within 20-30 s, not 4 min.
    pingInterval: 10_000,
    maxPingOut: 2,
  };
  // The first connection is awaited: a sink that never reached NATS cannot know its stream or max payload.
  let current = await connect(connectionOptions);
  try {
    await ensureStream(current, options);
  } catch (error) {
    await current.close();
    throw error;
  }
  let jetstream: JetStreamClient = current.jetstream();
  let connected = true;
  /** Since when the sink has been unable to publish (for /readyz), or null. */
  let downSince: number | null = null;
  let closing = false;
  /** The stream is checked again after every reconnect: a server that lost its storage has no stream. */
  let streamChecked: Promise<void> | null = Promise.resolve();
  let maxPayload = current.info?.max_payload;

  const markDown = (why: string) => {
    connected = false;
    downSince ??= Date.now();
    logger?.warn({ url: redacted(options.url) }, `the NATS sink is down (${why}); ingest answers 503 until it reconnects`);
  };

  const watch = (connection: NatsConnection) => {
    void (async () => {
      for await (const status of connection.status()) {
        if (connection !== current) return;
        if (status.type === 'disconnect') markDown('disconnected');
        else if (status.type === 'reconnect') {
          connected = true;
          streamChecked = null;
          maxPayload = connection.info?.max_payload ?? maxPayload;
          logger?.info({ url: redacted(options.url), downForMs: downSince === null ? 0 : Date.now() - downSince }, 'the NATS sink reconnected');
          downSince = null;
        }
      }
    })().catch(() => {});
    void connection.closed().then((error) => {
      if (closing || connection !== current) return;
      markDown(`connection closed: ${error ? String(error) : 'no reason given'}`);
      void replace();
    });
  };

  // A closed connection is never used again: a new one is made until one connects or the sink closes.
  const replace = async () => {
    let pauseMs = 500;
    for (let attempt = 1; !closing; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, pauseMs).unref());
      if (closing) return;
      try {
        const connection = await connect(connectionOptions);
        if (closing) {
          await connection.close();
          return;
        }
        current = connection;
        jetstream = connection.jetstream();
        maxPayload = connection.info?.max_payload ?? maxPayload;
        streamChecked = null;
        connected = true;
        downSince = null;
        watch(connection);
        logger?.info({ url: redacted(options.url), attempt }, 'the NATS sink made a new connection');
        return;
      } catch (error) {
        if (attempt === 1 || attempt % 20 === 0) logger?.warn({ err: error, url: redacted(options.url), attempt }, 'the NATS sink cannot connect yet; trying again');
      }
      pauseMs = Math.min(pauseMs * 2, LONGEST_RECONNECT_PAUSE_MS);
    }
  };

  watch(current);

  return {
    connection: () => current,
    async publish(batch): Promise<SinkAnswer> {
      if (closing) throw new Error('the NATS sink is closed');
      if (!connected) throw new Error('NATS is not connected: the sink is reconnecting');
      let data: Buffer;
      try {
        data = Buffer.from(JSON.stringify(batch));
      } catch (error) {
        // JSON.stringify recurses: a body nested deep enough overflows the stack (the doors bound the depth of
        // what they decode; this is the sink's own guard), and a BigInt has no JSON form.
        return { status: 'refused', reason: 'unserialisable', message: `the readings cannot be written as JSON: ${(error as Error).message}` };
      }
      const messageId = messageIdOf(batch);
      const meta = headers();
      meta.set('Governance-Tenant', batch.tenantId);
      meta.set('X-Request-ID', batch.requestId);
      meta.set('Nats-Msg-Id', messageId);
      const bytes = data.length + headerBytes(batch.tenantId, batch.requestId, messageId);
      const limit = current.info?.max_payload ?? maxPayload;
      if (limit !== undefined && bytes > limit) return tooLarge(bytes, limit);
      streamChecked ??= ensureStream(current, options).catch((error: unknown) => {
        streamChecked = null;
        throw error;
      });
      await streamChecked;
      try {
        const ack = await jetstream.publish(subjectFor(options.subjectPrefix, batch.tenantId), data, { headers: meta });
        return ack.duplicate ? DUPLICATE : STORED;
      } catch (error) {
        const fault = error as { code?: string; api_error?: { err_code?: number } };
        // The client's own check against max_payload (a server that lowered it since our check) and the
        // stream's max_msg_size: both are about this batch, so no retry can help.
        if (fault.code === 'MAX_PAYLOAD_EXCEEDED' || fault.api_error?.err_code === STREAM_MESSAGE_EXCEEDS_MAXIMUM) return tooLarge(bytes, limit);
        // No responders: the stream is gone (a server without its storage); checked again before the next publish.
        if (fault.code === '503') streamChecked = null;
        throw error;
      }
    },
    maxBodyBytes() {
      const limit = current.info?.max_payload ?? maxPayload;
      return limit === undefined ? undefined : Math.max(0, limit - ENVELOPE_RESERVE_BYTES);
    },
    unavailable() {
      if (closing) return 'the NATS sink is closed';
      if (connected) return null;
      const forSeconds = downSince === null ? 0 : Math.round((Date.now() - downSince) / 1000);
      return `the reading sink (NATS JetStream at ${redacted(options.url)}) is disconnected, reconnecting for ${forSeconds}s`;
    },
    async close() {
      closing = true;
      // Drain waits for the server; a connection that is reconnecting is closed at once instead.
      if (connected && !current.isClosed()) await current.drain();
      else await current.close();
    },
  };
}

/** The size of the header block nats.js writes (`NATS/1.0`, one `Key: value` line each, a blank line), as max_payload counts it. */
function headerBytes(tenantId: string, requestId: string, messageId: string): number {
  const line = (key: string, value: string) => key.length + 2 + Buffer.byteLength(value) + 2;
  return 'NATS/1.0\r\n'.length + line('Governance-Tenant', tenantId) + line('X-Request-ID', requestId) + line('Nats-Msg-Id', messageId) + 2;
}

function tooLarge(bytes: number, limit: number | undefined): SinkAnswer {
  return {
    status: 'refused',
    reason: 'too-large',
    message: `the readings take ${bytes} bytes with their envelope; the reading pipeline (NATS) takes at most ${limit ?? 'its max_payload'}`,
  };
}

/** The JetStream message ID: the request ID within its route and tenant, so no tenant can choose an ID that drops another's. */
export function messageIdOf(batch: Pick<AcceptedBatch, 'route' | 'tenantId' | 'requestId'>): string {
  return `${batch.route}:${batch.tenantId}:${batch.requestId}`;
}

/** The URL without its credentials, for /readyz. */
function redacted(url: string): string {
  return url.replace(/\/\/[^@/,]*@/g, '//');
}

async function ensureStream(connection: NatsConnection, options: NatsSinkOptions): Promise<void> {
  const manager = await connection.jetstreamManager();
  const subjects = [`${options.subjectPrefix}.>`];
  try {
    await manager.streams.info(options.stream);
  } catch (error) {
    if ((error as { api_error?: { err_code?: number } }).api_error?.err_code !== STREAM_NOT_FOUND) throw error;
    await manager.streams.add({ name: options.stream, subjects, num_replicas: options.replicas ?? defaultReplicas(connection, options.url) });
  }
}

/** The servers of a comma-separated NATS_URL. */
export function serversOf(url: string): string[] {
  return url
    .split(',')
    .map((server) => server.trim())
    .filter(Boolean);
}

/**
 * 3 replicas on a cluster of 3 servers or more, else 1: a stream of 3 keeps taking readings with one server
 * down (a quorum of 2), while 2 would stop with either down. The cluster's size is what the client knows of it:
 * the servers named in NATS_URL, or those the server it reached gossips (its INFO's connect_urls), whichever
 * is more.
 */
function defaultReplicas(connection: NatsConnection, url: string): number {
  const known = Math.max(serversOf(url).length, connection.info?.connect_urls?.length ?? 1);
  return known >= 3 ? 3 : 1;
}

// JetStream's API error code for "stream not found"; any other failure is a fault to report, not to paper over.
const STREAM_NOT_FOUND = 10059;
// JetStream's API error code for "message size exceeds maximum allowed" (the stream's max_msg_size).
const STREAM_MESSAGE_EXCEEDS_MAXIMUM = 10054;

/**
 * A subject token may not hold '.', '*', '>' or whitespace; tenant names are percent-encoded into one token
 * so no name can reach another tenant's subject or a wildcard.
 */
export function subjectFor(prefix: string, tenantId: string): string {
  return `${prefix}.${tenantId.replace(/[.*>%\s]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)}`;
}
