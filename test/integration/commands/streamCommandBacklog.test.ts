// The stream-revision path (the one EVENTSTORE_URL uses) through the EventStore port on the PostgreSQL
// adapter, which enforces expected revisions as EventStoreDB does.
import { createStreamCommandBacklog } from '../../../src/commands/stream/createStreamCommandBacklog.ts';
import { describeCommandBacklog } from './commandBacklog.behaviour.ts';

describeCommandBacklog('command backlog on a stream with expected revisions', ({ db, store, ceilings, commandTtlMs, now }) =>
  createStreamCommandBacklog({ store, db, ceilings, commandTtlMs, now }),
);
