export { LeasingClient, type LeasingClientOptions, type LeasingClientStats } from './leasingClient.ts';
export type { LeaseRequest, LeaseGrant, LeaseExchange, LeaseAnswer, ClientSummary } from './protocol.ts';
