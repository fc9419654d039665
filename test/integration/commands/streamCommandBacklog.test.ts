// The stream-revision path (the one EVENTSTORE_URL uses): through the EventStore port on the PostgreSQL
// adapter, which enforces expected revisions as EventStoreDB does, always; and on EventStoreDB itself when
// EVENTSTORE_URL is set (ceilings and the read model stay in the database, as in the service).
import { describe } from 'vitest';
import { createStreamCommandBacklog } from '../../../src/commands/stream/createStreamCommandBacklog.ts';
import { createEventStoreDbEventStore } from '../../../src/ledger/eventstoredb/index.ts';
import { storageTargets } from '../../support/databases.ts';
import { describeCommandBacklog, type BacklogFactory } from './commandBacklog.behaviour.ts';

const streamBacklog: BacklogFactory = ({ db, store, ceilings, commandTtlMs, now }) => createStreamCommandBacklog({ store, db, ceilings, commandTtlMs, now });

describeCommandBacklog('command backlog on a stream with expected revisions', streamBacklog);

// The same behaviour when no tenant stays in memory between decisions and a snapshot follows every
// decision: each decision starts from the stored snapshot and folds only what came after it.
const restoredEveryTime: BacklogFactory = ({ db, store, ceilings, commandTtlMs, now }) =>
  createStreamCommandBacklog({ store, db, ceilings, commandTtlMs, now, maxTenantsInMemory: 0, snapshotEveryEvents: 1 });
describeCommandBacklog('command backlog on a stream, restored from a snapshot for every decision', restoredEveryTime);

const eventStoreUrl = process.env.EVENTSTORE_URL;
if (!eventStoreUrl) console.warn('EVENTSTORE_URL is not set: the command backlog on EventStoreDB is skipped (the same code runs above on the PostgreSQL ledger).');

describe.skipIf(!eventStoreUrl)('on EventStoreDB', () => {
  describeCommandBacklog('command backlog on an EventStoreDB stream', streamBacklog, {
    openStore: () => createEventStoreDbEventStore(eventStoreUrl!),
    targets: storageTargets.slice(0, 1),
  });
});
