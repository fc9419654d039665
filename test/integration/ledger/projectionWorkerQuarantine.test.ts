// A projection worker thread that a stored event ends, or holds for ever: the thread's heap is limited, so the
// event ends the thread and not the process; a thread whose event loop stays blocked on a page is ended by the
// watchdog. The next thread applies that page one event at a time, and the event that ends a thread alone is
// set aside in the quarantine; every other event is applied once, and the projection catches up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { startProjectionWorker } from '../../../src/ledger/projectionWorker.ts';
import { listQuarantine } from '../../../src/ledger/quarantine.ts';
import type { QuarantineNotice } from '../../../src/ledger/projectionRunner.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { bucketRows, ADMISSION_TRENDS } from '../../../src/metrics/index.ts';
import { postgresOnly, type TestDb } from '../../support/databases.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';
import { waitFor } from '../../support/waitFor.ts';

const T0 = Date.UTC(2026, 5, 1, 12, 0, 0) / 1000;
const POISON_ENTRY = new URL('../../support/poisonProjectionWorker.ts', import.meta.url);
if (!postgresOnly) console.warn('DATABASE_URL is not set: the projection worker quarantine suite (PostgreSQL only) is skipped.');

describe.skipIf(!postgresOnly).each(['thread', 'process'] as const)('a projection worker %s ended by a stored event (PostgreSQL; needs DATABASE_URL)', (isolation) => {
  let testDb: TestDb;
  let store: EventStore;

  beforeAll(async () => {
    testDb = await postgresOnly!.open();
    store = createPostgresEventStore(testDb.db);
  });
  afterAll(async () => {
    await store?.close();
    await testDb?.dispose();
  });

  it('sets aside the event that exhausts its heap and the one that blocks its loop, alone, and applies every other', async () => {
    const recorder = createLedgerRecorder(store);
    const tenants = ['before', 'eat-the-heap', 'between', 'spin-the-loop', 'after'];
    // One event each, in this order (a Recorder batch is one event).
    for (const [index, tenantId] of tenants.entries()) await recorder.record([admissionSummary({ tenantId, fromSecond: T0 + index, admittedUnits: index + 1 })], []);
    // Global reads stop below the oldest transaction still open anywhere on the server (the ledger README), so
    // on a shared server the five events may become readable a moment after their appends commit.
    let events = await store.readAll('start', 100, { types: ['AdmissionsRecorded'] });
    await waitFor(async () => (events = await store.readAll('start', 100, { types: ['AdmissionsRecorded'] })).length === tenants.length, {
      timeoutMs: 30_000,
      description: 'the five appended events to be readable in the global order',
    });
    const notices: QuarantineNotice[] = [];
    const faults: string[] = [];
    const runner = await startProjectionWorker(testDb.db, store, admissionTrendsProjection, {
      entry: POISON_ENTRY,
      isolation,
      connection: { connectionString: testDb.env!.DATABASE_URL!, schema: testDb.env!.GOVERNANCE_DB_SCHEMA! },
      retryDelayMs: 50,
      maxHeapMb: 96,
      // Well above the few seconds a thread near its heap limit can spend collecting garbage on a busy machine,
      // so the heap-eater is ended by running out of memory, not by this watchdog (production: 30 s).
      maxBlockedMs: 8_000,
      onError: (error) => faults.push(String(error)),
      onQuarantined: (notice) => notices.push(notice),
    });
    try {
      // Four threads end (each poison twice: in its page, then alone) and five start, from the TypeScript sources.
      await runner.waitForCaughtUp({ timeoutMs: 120_000 });
      const quarantined = await listQuarantine(testDb.db, { projection: admissionTrendsProjection.name });
      expect(quarantined.map((event) => event.id)).toEqual([events[1]!.id, events[3]!.id]);
      expect(quarantined[0]!.reason).toBe(`it ran the projection's worker ${isolation} out of memory (its heap is limited to 96 MB) when applied alone`);
      expect(quarantined[1]!.reason).toBe(`it held the projection's worker ${isolation}'s event loop for more than 8 s when applied alone`);
      expect(notices.map((notice) => notice.id)).toEqual([events[1]!.id, events[3]!.id]);
      expect(faults.filter((fault) => new RegExp(`worker ${isolation} ended`).test(fault))).toHaveLength(4);
      const { rows } = await testDb.db.query<{ tenant_id: string; admitted_units: string }>(
        `SELECT tenant_id, admitted_units::text FROM ${bucketRows(ADMISSION_TRENDS, 'MINUTE')} AS minutes ORDER BY tenant_id`,
      );
      expect(rows).toEqual([
        { tenant_id: 'after', admitted_units: '5' },
        { tenant_id: 'before', admitted_units: '1' },
        { tenant_id: 'between', admitted_units: '3' },
      ]);
      expect(await runner.lag()).toMatchObject({ pending: false });
    } finally {
      await runner.stop();
    }
  }, 180_000);
});
