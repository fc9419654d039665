// The wire format of POST /v1/leases (one exchange a round trip): the client asks for slices of tenants'
// budgets and hands back what it admitted and refused since the last exchange.

export interface LeaseRequest {
  tenantId: string;
  dimension: string;
  allowance?: string | null;
  /** Units wanted for the next lease period. */
  want: number;
}

export interface LeaseGrant {
  /** Units the client may admit until the grant expires. */
  granted: number;
  /** The tenant's limit per second (per window for a fixed window); the fallback meters at half of it. */
  limit: number;
  /** How long the grant is valid from when the answer arrives (a fixed window's grant ends with its second). */
  validForMs: number;
}

/**
 * Decisions a client made on one (tenant, dimension, allowance) over `seconds` seconds of one minute (UTC):
 * one second as a rule, more when undelivered seconds of the key merged. The service refuses a summary that
 * spans more than 60 s or two minutes, lies more than 7 days back or ends more than 60 s ahead, or carries
 * numbers out of bounds (src/doors/leases/README.md).
 */
export interface ClientSummary {
  /**
   * Set when the summary is first sent and kept when it is sent again: the service records a summary with an
   * id once however often it comes. Optional on the wire (older clients), but without it a summary sent
   * again after a lost answer is counted twice.
   */
  id?: string;
  tenantId: string;
  dimension: string;
  allowance: string | null;
  fromSecond: number;
  seconds: number;
  admittedUnits: number;
  admittedCount: number;
  refusedUnits: number;
  refusedCount: number;
  /** Seconds within the span in which something was refused. */
  hitSeconds: number;
}

export interface LeaseExchange {
  leases: LeaseRequest[];
  summaries: ClientSummary[];
}

export interface LeaseError {
  field: string;
  reason: string;
}

/** What became of one summary: recorded (also when it had been before), or refused for a field, never to be sent again. */
export type SummaryOutcome = { recorded: true } | { error: LeaseError };

export interface LeaseAnswer {
  /** One per lease, in order; `error` on a lease the service could not read (granted 0). */
  grants: (LeaseGrant & { error?: LeaseError })[];
  /** One per summary, in order (absent from services older than the summary checks). */
  summaries?: SummaryOutcome[];
}
