// The leasing client sends each summary under an id and, when an exchange fails, sends the same summaries
// again unchanged under the same ids; the service records a summary with an id once. Here the service's
// Recorder (the ledger's, on PostgreSQL or PGlite) is slow for the first exchanges that carry summaries, so
// their answers come after the client gave up (its timeout): the client sends them again while (or after) the
// first copy is stored, and the ledger still counts every admission and refusal once (issue 34 item 9: a
// summary posted three times was in the ledger three times).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { LeasingClient } from '../../../packages/client/src/index.ts';
import { createLeaseRoutes } from '../../../src/doors/leases/leaseRoutes.ts';
import { Governor, type Recorder } from '../../../src/governance/index.ts';
import { createServer, listen } from '../../../src/http-server/server.ts';
import { ADMISSIONS_STREAM } from '../../../src/ledger/catalog/admissions.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { postgresOnly, storageTargets, type TestDb } from '../../support/databases.ts';
import { waitFor } from '../../support/waitFor.ts';
import { MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';
import { admissionSummaryReader } from '../../../src/ledger/catalog/summaryRefs.ts';

const CLIENT_TIMEOUT_MS = 300;

describe('lease summaries sent again after a lost answer', () => {
  let testDb: TestDb;
  let store: EventStore;
  let server: ReturnType<typeof createServer>;
  let url: string;
  let slowRecords = 2;
  let recordCalls = 0;
  const leaseGovernor = new Governor({ limitSource: new MemoryLimitSource().tenant('fleet', { API_REQUESTS: { override: { ratePerSecond: 1000 } } }) });

  beforeAll(async () => {
    testDb = await (postgresOnly ?? storageTargets[0]!).open();
    store = createPostgresEventStore(testDb.db);
    const ledger = createLedgerRecorder(store);
    // Stores what it is given, but answers the first exchanges only after the client's timeout.
    const recorder: Recorder = {
      async record(admissions, unresolved, batchId) {
        recordCalls++;
        await ledger.record(admissions, unresolved, batchId);
        if (slowRecords > 0) {
          slowRecords--;
          await new Promise((resolve) => setTimeout(resolve, 3 * CLIENT_TIMEOUT_MS));
        }
      },
    };
    const logger = pino({ level: 'silent' });
    const routes = createLeaseRoutes({ leaseGovernor, recorder, authorize: async () => 'ok', logger });
    server = createServer({ logger, readiness: [] }, routes);
    url = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
  }, 120_000);

  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await leaseGovernor.close();
    await store?.close();
    await testDb?.dispose();
  });

  it('records each summary once although the client sent it again under its id', async () => {
    const client = new LeasingClient({ url, token: 'test-token', timeoutMs: CLIENT_TIMEOUT_MS, retryMs: 100 });
    client.prepare('fleet', 'API_REQUESTS');
    let admitted = 0;
    let refused = 0;
    // Three seconds of calls, in turns so the exchanges get the event loop.
    const endAt = Date.now() + 3_000;
    while (Date.now() < endAt) {
      for (let i = 0; i < 20; i++) {
        if (client.admit('fleet', 'API_REQUESTS')) admitted++;
        else refused++;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await client.close();
    const stats = client.stats();
    console.log(`client: ${admitted} admitted, ${refused} refused, ${stats.failedExchanges} failed exchanges, ${recordCalls} record calls`);
    expect(stats.failedExchanges).toBeGreaterThanOrEqual(1);
    expect(stats.pendingSummaries).toBe(0);
    expect(stats.refusedSummaries).toBe(0);

    let ledgerAdmitted = 0;
    let ledgerRefused = 0;
    await waitFor(
      async () => {
        const entries = (await store.readStream(ADMISSIONS_STREAM)).flatMap(admissionSummaryReader());
        ledgerAdmitted = entries.reduce((sum, each) => sum + each.admittedUnits, 0);
        ledgerRefused = entries.reduce((sum, each) => sum + each.rejectedUnits + each.shedUnits, 0);
        return ledgerAdmitted + ledgerRefused >= admitted + refused;
      },
      { timeoutMs: 20_000, description: 'every decision of the client in the ledger' },
    );
    // A moment more: a copy stored late would show up now.
    await new Promise((resolve) => setTimeout(resolve, 4 * CLIENT_TIMEOUT_MS));
    const entries = (await store.readStream(ADMISSIONS_STREAM)).flatMap(admissionSummaryReader());
    expect(entries.reduce((sum, each) => sum + each.admittedUnits, 0)).toBe(admitted);
    expect(entries.reduce((sum, each) => sum + each.rejectedUnits + each.shedUnits, 0)).toBe(refused);
    for (const entry of entries) expect(entry.seconds).toBeLessThanOrEqual(60);
  });
});
