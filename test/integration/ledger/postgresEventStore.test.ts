import { describe } from 'vitest';
import { storageTargets } from '../../support/databases.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { appendInTransaction } from '../../../src/ledger/postgres/appendInTransaction.ts';
import type { AppendResult } from '../../../src/ledger/eventStore.ts';
import { eventStoreContract, type ContractExtras } from './eventStore.contract.ts';

describe.each(storageTargets)('PostgreSQL event store on $name', (target) => {
  eventStoreContract(target.name, async () => {
    const { db, connectAgain, dispose } = await target.open();
    const store = createPostgresEventStore(db, { pollIntervalMs: 250 });
    // PGlite is one connection: a transaction held open would block every other query, so the race
    // runs there without held-open writers (its transactions serialise anyway).
    const holder = connectAgain?.({ max: 4 });
    const extra: ContractExtras = {};
    if (holder) {
      extra.appendHeldOpen = (stream, events) =>
        new Promise((resolveWritten, rejectWritten) => {
          let release!: () => void;
          const released = new Promise<void>((resolve) => (release = resolve));
          const committed = holder.transaction(async (tx) => {
            const result = await appendInTransaction(tx, stream, events);
            resolveWritten({ commit: () => (release(), committed) });
            await released;
            return result;
          });
          committed.catch(rejectWritten);
        }) as Promise<{ commit(): Promise<AppendResult> }>;
    }
    return {
      store,
      extra,
      async dispose() {
        await store.close();
        await dispose();
      },
    };
  });
});
