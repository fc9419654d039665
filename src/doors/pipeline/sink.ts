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
  requestId: string;
  receivedAtMs: number;
  /** Readings for /v1/ingest and the device doors, uplinks for /v1/integrations; one unit each is what was charged. */
  units: number;
  items: readonly Record<string, unknown>[];
}

export interface ReadingSink {
  /**
   * Resolves once the batch is durably handed on; a rejection is a fault (the caller answers 503). A sink that
   * takes the batch at once (in memory) returns nothing, and the door answers in the same turn rather than
   * waiting on a promise that could only resolve.
   */
  publish(batch: AcceptedBatch): Promise<void> | undefined;
  close(): Promise<void>;
}
