// The stream-revision path (the one EVENTSTORE_URL uses): through the EventStore port on the PostgreSQL
// adapter, which enforces expected revisions as EventStoreDB does, always; and on EventStoreDB itself when
// EVENTSTORE_URL is set (ceilings and the read model stay in the database, as in the service).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStreamCommandBacklog } from '../../../src/command-backlog/stream/createStreamCommandBacklog.ts';
import { createEventStoreDbEventStore } from '../../../src/ledger/eventstoredb/index.ts';
import { eventBytes } from '../../../src/ledger/appendSize.ts';
import { commandsStream } from '../../../src/ledger/catalog/commands.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { storageTargets } from '../../support/databases.ts';
import { setCeiling, tableCeilings } from './ceilingTable.ts';
import { openCommandsDatabase, OPEN_TIMEOUT_MS, type CommandsDatabase } from './commandsDatabase.ts';
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

// An expiry pass over a long backlog: the tenant's CommandExpired events go out in appends of a bounded size
// (EventStoreDB refuses appends over 1 MiB), oldest first, each at the revision the one before left.
describe('stream command backlog: an expiry pass in appends of a bounded size', () => {
  const target = storageTargets[0]!;
  let opened: CommandsDatabase;
  beforeAll(async () => {
    opened = await openCommandsDatabase(target);
  }, OPEN_TIMEOUT_MS);
  afterAll(() => opened.close());

  it('expires every due command, in appends each under the cap', async () => {
    const { testDb, store } = opened;
    const sizes: number[] = [];
    const watched: EventStore = {
      ...store,
      append(stream, events, options) {
        if (events.some((event) => event.type === 'CommandExpired')) sizes.push(events.reduce((sum, event) => sum + eventBytes(event), 0));
        return store.append(stream, events, options);
      },
    };
    const tenantId = `tenant-split-${randomUUID()}`;
    await setCeiling(testDb.db, tenantId, 50);
    let clock = new Date('2024-06-01T00:00:00Z');
    const backlog = createStreamCommandBacklog({ store: watched, db: testDb.db, ceilings: tableCeilings, commandTtlMs: 60_000, now: () => clock, maxAppendBytes: 2_000 });
    const actor = { id: 'svc:command-delivery', role: 'SERVICE' };
    for (let n = 0; n < 20; n++) {
      clock = new Date(clock.getTime() + 1);
      await backlog.enqueue(actor, { tenantId, commandId: `c${n}`, deviceId: 'dev-1', payload: { n } });
    }
    clock = new Date(clock.getTime() + 120_000);
    expect(await backlog.expireOlderThanTtl()).toEqual({ expired: 20 });
    expect(sizes.length).toBeGreaterThan(2);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(2_000);
    const expired = (await store.readStream(commandsStream(tenantId))).filter((event) => event.type === 'CommandExpired');
    expect(expired.map((event) => (event.data as { commandId: string; undelivered: number }).undelivered)).toEqual(Array.from({ length: 20 }, (_, n) => 19 - n));
    expect(expired.map((event) => (event.data as { commandId: string }).commandId)).toEqual(Array.from({ length: 20 }, (_, n) => `c${n}`));
  });
});
