export { LeasingClient, type LeasingClientOptions, type LeasingClientStats } from './leasingClient.ts';
export type { LeaseRequest, LeaseGrant, LeaseExchange, LeaseAnswer, LeaseError, ClientSummary, SummaryOutcome } from './protocol.ts';
