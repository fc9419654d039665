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

/** Decisions a client made on one (tenant, dimension, allowance) in one second. */
export interface ClientSummary {
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

export interface LeaseAnswer {
  grants: LeaseGrant[];
}
