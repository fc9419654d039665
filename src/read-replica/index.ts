// Reads that may be a little stale, served by a streaming replica of the PostgreSQL primary (DATABASE_READ_URL):
// the routing, its probe of how far behind the replica is, and read-your-writes per caller.
export * from './readRouting.ts';
export { openReadRouting } from './openReadRouting.ts';
