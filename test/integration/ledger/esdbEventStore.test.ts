import { describe, expect, it } from 'vitest';
import { UnavailableError } from '@eventstore/db-client';
import { createEventStoreDbEventStore } from '../../../src/ledger/eventstoredb/index.ts';
import { eventStoreContract } from './eventStore.contract.ts';

const eventStoreUrl = process.env.EVENTSTORE_URL;
if (!eventStoreUrl) {
  console.warn(
    'EVENTSTORE_URL is not set: the EventStoreDB contract suite is skipped. To run it, point EVENTSTORE_URL at an ' +
      'EventStoreDB 22.6+ or KurrentDB 25 server (e.g. esdb://localhost:2113?tls=false; on a secure cluster a user of $admins or $ops).',
  );
}

describe.skipIf(!eventStoreUrl)('EventStoreDB event store (needs EVENTSTORE_URL)', () => {
  // EventStoreDB positions are assigned at commit and the client has no transactions: the race runs
  // without held-open writers.
  eventStoreContract('eventstoredb', async () => {
    const store = createEventStoreDbEventStore(eventStoreUrl!);
    return { store, dispose: () => store.close() };
  });
});

describe('EventStoreDB event store without a server', () => {
  it('fails reads and appends with the client error instead of hanging', async () => {
    // Port 9 (discard) refuses connections on this machine, as any closed port does.
    const store = createEventStoreDbEventStore('esdb://127.0.0.1:9?tls=false');
    try {
      await expect(store.readAll('start', 10)).rejects.toBeInstanceOf(UnavailableError);
      // The client's batch append reports the gRPC status as is, without its own error class.
      await expect(store.append('s', [{ type: 'Opened', data: {} }])).rejects.toThrow(/UNAVAILABLE/);
    } finally {
      await store.close();
    }
  });
});
