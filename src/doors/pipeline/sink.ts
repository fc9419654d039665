// Where accepted readings go: the port the front door hands admitted, authenticated messages to. The
// default counts them; natsSink publishes them to NATS JetStream.

export interface AcceptedBatch {
  tenantId: string;
  /** 'http' for /v1/ingest, 'integration' for /v1/integrations; the device doors name themselves. */
  route: 'http' | 'integration' | 'mqtt' | 'sparkplug' | 'lwm2m';
  /** The INGEST allowance that paid for it, for the device doors (LIVE, BACKLOG, SPARKPLUG, LWM2M). */
  allowance?: string;
  /** Unix ms the message was sent, when the door metered it by its send time (BACKLOG). */
  sentAtMs?: number;
  integration?: string;
  /** Who the credential says sent it. */
  credential: { kind: 'tenant' | 'device' | 'integration'; subject: string | null };
  /**
   * What identifies the message: the HTTP request ID (the caller's X-Request-ID or a fresh one), or for a
   * broker message an ID derived from the delivery (brokerMessageId), the same when the broker delivers it
   * again. A sink that de-duplicates (NATS: the JetStream message ID) does so by this, within the tenant and route.
   */
  requestId: string;
  receivedAtMs: number;
  /** Readings for /v1/ingest and the device doors, uplinks for /v1/integrations; one unit each is what was charged. */
  units: number;
  items: readonly Record<string, unknown>[];
}

/** Why a sink refuses a batch for its content: permanent, so a door answers 4xx or drops it, never retries. */
export type SinkRefusal = 'too-large' | 'unserialisable';

/**
 * What a sink says of a batch it answered for:
 * - stored: taken now;
 * - duplicate: a batch with the same message ID was taken before (inside the sink's duplicate window), so
 *   this one was not stored again;
 * - refused: its content can never be taken (larger than the sink's largest message, cannot be serialised).
 * A fault of the sink's own (NATS down, a timeout) is not an answer: the promise rejects and the door retries.
 */
export type SinkAnswer = { status: 'stored' } | { status: 'duplicate' } | { status: 'refused'; reason: SinkRefusal; message: string };

export const STORED: SinkAnswer = { status: 'stored' };
export const DUPLICATE: SinkAnswer = { status: 'duplicate' };

export interface ReadingSink {
  /**
   * Resolves once the batch is durably handed on (or refused for its content); a rejection is a fault (the
   * caller answers 503 or tries again). A sink that takes the batch at once (in memory) answers without a
   * promise, and the door answers in the same turn rather than waiting on a promise that could only resolve.
   */
  publish(batch: AcceptedBatch): Promise<SinkAnswer> | SinkAnswer;
  /**
   * The largest body a door should take for this sink, in bytes: the sink's largest message less what it adds
   * around the readings (NATS: the server's max_payload less the envelope). Undefined when the sink sets no
   * bound of its own. A body within it may still be refused when its readings serialise larger.
   */
  maxBodyBytes?(): number | undefined;
  /** Null while the sink takes batches; otherwise why not (for /readyz: "NATS is disconnected, reconnecting"). */
  unavailable?(): string | null;
  close(): Promise<void>;
}
