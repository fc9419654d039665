// A projection's page holds the ledger's readers back only while it writes (src/ledger/projectPage.ts): on
// PostgreSQL a reader waits for every transaction older than what it reads that has taken a transaction ID, and
// the page used to take one first (the checkpoint's row lock), so a page busy in JavaScript held every reader
// back. Here a page is held in its projection's code, before its first write: an event appended meanwhile is
// read at once, and the page still applies exactly once, the checkpoint written last. PostgreSQL only.
import { describe, expect, it } from 'vitest';
import { startProjectionRunner } from '../../../src/ledger/projectionRunner.ts';
import type { Projection } from '../../../src/ledger/projection.ts';
import { postgresOnly } from '../../support/databases.ts';
import { useFileLedger } from '../../support/fileLedger.ts';
import { appendCounterEvents, counterProjection, counterScope, countApplications, createCounterTables } from '../../support/counterProjection.ts';
import { waitFor } from '../../support/waitFor.ts';

describe.skipIf(!postgresOnly)('a projection page on PostgreSQL', () => {
  const ledger = useFileLedger(postgresOnly!);

  it('holds no reader back while its projection works before writing', { timeout: 60_000 }, async () => {
    const scope = counterScope();
    await createCounterTables(ledger.db, scope);
    const counter = counterProjection(scope);
    let inPage!: () => void;
    const pageStarted = new Promise<void>((resolve) => (inPage = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held: Projection = {
      ...counter,
      async applyPage(events, tx) {
        inPage();
        await released;
        for (const event of events) await counter.apply(event, tx);
        return [];
      },
    };
    await appendCounterEvents(ledger.store, scope, 3, { unrelatedEvery: 100 });
    const runner = await startProjectionRunner(ledger.db, ledger.store, held, { pageSize: 100 });
    try {
      await pageStarted;
      // Appended after the page's transaction began: read without waiting for it (other test files' transactions
      // on this server may hold it back a moment; the page's, held until released, would for good).
      const later = `${scope.name}-later`;
      await ledger.store.append(later, [{ type: scope.unrelated, data: { n: 1 } }]);
      let read = 0;
      await waitFor(async () => (read = (await ledger.store.readAll('start', 100)).filter((event) => event.stream === later).length) === 1, {
        timeoutMs: 10_000,
        description: 'the event appended during the page to be read',
      });
      expect(read).toBe(1);
      release();
      await runner.waitForCaughtUp();
      expect(await countApplications(ledger.db, scope)).toEqual({ applications: 3, distinctEvents: 3 });
    } finally {
      release();
      await runner.stop();
    }
  });
});
