// A projection run in a worker thread or a child process (startProjectionWorker's isolation) on the PostgreSQL
// ledger: it builds the same read model as in the service's thread, runs at the priority the projection asks
// (threadNice: the thread's, or the child's whole session's), hands what it committed back to afterCommit,
// outlives its worker ending, and stops cleanly.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/db.ts';
import type { EventStore } from '../../../src/ledger/eventStore.ts';
import type { Projection } from '../../../src/ledger/projection.ts';
import type { RecordedEvent } from '../../../src/ledger/eventStore.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { startProjectionWorker } from '../../../src/ledger/projectionWorker.ts';
import { rebuildProjection } from '../../../src/ledger/rebuild.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { admissionDemandProjection } from '../../../projections/admissionDemand.ts';
import { projectionWorkerEntry } from '../../../projections/workerProjections.ts';
import { bucketRows, familyTables, openMarkTable, ADMISSION_TRENDS } from '../../../src/metrics/index.ts';
import { postgresOnly, type TestDb } from '../../support/databases.ts';
import { childProcessesOf } from '../../support/replicas.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';
import type { AdmissionSummary } from '../../../src/governance/index.ts';

const T0 = Date.UTC(2026, 5, 1, 23, 59, 0) / 1000;
// A thread module whose thread ends at planted faults (imported, it would run: only its path is named here).
const CRASHING_ENTRY = new URL('../../support/crashingProjectionWorker.ts', import.meta.url);
const CRASHING_TENANT = 'crash-the-thread';
// A thread from the TypeScript sources compiles its modules first: allow for it on a loaded machine.
const WAIT = { timeoutMs: 30_000 };

async function trendRows(db: Db): Promise<unknown[]> {
  const rows: unknown[] = [];
  // Not the open minutes' mark: its token names whichever page wrote last (openMinutes.ts).
  for (const table of familyTables(ADMISSION_TRENDS).filter((table) => table !== openMarkTable(ADMISSION_TRENDS))) {
    const result = await db.query(`SELECT * FROM ${table}`);
    rows.push(...result.rows.map((row) => JSON.stringify({ table, ...row }, (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : value))));
  }
  return rows.sort();
}

/** Each thread of this process and its nice value (/proc/self/task/<id>/stat, field 19). */
function threadNiceValues(): Map<number, number> {
  const values = new Map<number, number>();
  for (const task of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
    } catch {
      continue; // the thread ended since the listing
    }
    values.set(Number(task), Number(stat.split(') ')[1]!.split(' ')[16]));
  }
  return values;
}

/** The nice value of the autogroup (the session) of process `pid` (/proc/<pid>/autogroup: "/autogroup-N nice V"). */
function sessionNice(pid: number): number {
  return Number(/nice (-?\d+)/.exec(readFileSync(`/proc/${pid}/autogroup`, 'utf8'))![1]);
}

/** The live child processes of this process. */
const childProcesses = () => new Set(childProcessesOf(process.pid));

describe.skipIf(!postgresOnly).each(['thread', 'process'] as const)('a projection in a worker %s (PostgreSQL; needs DATABASE_URL)', (isolation) => {
  let testDb: TestDb;
  let store: EventStore;
  let connection: { connectionString: string; schema: string };

  beforeAll(async () => {
    testDb = await postgresOnly!.open();
    store = createPostgresEventStore(testDb.db);
    connection = { connectionString: testDb.env!.DATABASE_URL!, schema: testDb.env!.GOVERNANCE_DB_SCHEMA! };
  });
  afterAll(async () => {
    await store?.close();
    await testDb?.dispose();
  });

  const record = (summaries: AdmissionSummary[]) => createLedgerRecorder(store).record(summaries, []);

  it('builds the admission trends as a replay in this thread does, catching up and then following live', async () => {
    // Before the thread starts (catch-up), across a day boundary, with a summary split over two minutes.
    await record([
      admissionSummary({ fromSecond: T0, admittedUnits: 5, shedUnits: 2, hitSeconds: 1 }),
      admissionSummary({ tenantId: 'globex', fromSecond: T0 + 50, seconds: 20, admittedUnits: 40 }),
    ]);
    const runner = await startProjectionWorker(testDb.db, store, admissionTrendsProjection, { entry: projectionWorkerEntry(), connection, isolation });
    try {
      await runner.waitForCaughtUp(WAIT);
      // After (live), in a minute already written.
      await record([admissionSummary({ fromSecond: T0 + 10, admittedUnits: 1, rejectedUnits: 3 }), admissionSummary({ fromSecond: T0 + 3600, shedUnits: 9 })]);
      await runner.waitForCaughtUp(WAIT);
      expect(await runner.lag()).toMatchObject({ projection: 'admission-trends', pending: false, secondsBehind: 0 });
      expect(runner.lastError()).toBeUndefined();
      const built = await trendRows(testDb.db);
      expect(built.length).toBeGreaterThan(6);

      await runner.stop();
      // The same events replayed here, from an emptied read model.
      await rebuildProjection(testDb.db, store, admissionTrendsProjection);
      expect(await trendRows(testDb.db)).toEqual(built);
    } finally {
      await runner.stop();
    }
  });

  it.skipIf(process.platform !== 'linux' || isolation !== 'thread')("runs its thread at the projection's threadNice, the service thread's priority unchanged (Linux, per thread)", async () => {
    const niceThreads = async (projection: Projection) => {
      const before = threadNiceValues();
      const runner = await startProjectionWorker(testDb.db, store, projection, { entry: projectionWorkerEntry(), connection, isolation });
      try {
        await runner.waitForCaughtUp(WAIT);
        const after = threadNiceValues();
        expect(after.get(process.pid)).toBe(before.get(process.pid));
        return [...after].filter(([thread, nice]) => nice !== 0 && before.get(thread) !== nice).map(([, nice]) => nice);
      } finally {
        await runner.stop();
      }
    };
    // The demand's pages may wait; the trends' may not (their readiness bound is seconds).
    expect(admissionDemandProjection.threadNice).toBe(10);
    expect(await niceThreads(admissionDemandProjection)).toEqual([10]);
    expect(admissionTrendsProjection.threadNice).toBeUndefined();
    expect(await niceThreads(admissionTrendsProjection)).toEqual([]);
  });

  it.skipIf(process.platform !== 'linux' || isolation !== 'process')(
    "runs its process in a session of its own at the projection's threadNice, this process' session unchanged (Linux, autogroups)",
    async () => {
      const ownSession = readFileSync('/proc/self/autogroup', 'utf8');
      const niceSession = async (projection: Projection) => {
        const before = childProcesses();
        const runner = await startProjectionWorker(testDb.db, store, projection, { entry: projectionWorkerEntry(), connection, isolation });
        try {
          await runner.waitForCaughtUp(WAIT);
          const started = [...childProcesses()].filter((pid) => !before.has(pid));
          expect(started).toHaveLength(1);
          const child = started[0]!;
          expect(readFileSync(`/proc/${child}/autogroup`, 'utf8')).not.toBe(ownSession);
          expect(readFileSync('/proc/self/autogroup', 'utf8')).toBe(ownSession);
          return sessionNice(child);
        } finally {
          await runner.stop();
        }
      };
      expect(await niceSession(admissionDemandProjection)).toBe(10);
      expect(await niceSession(admissionTrendsProjection)).toBe(0);
    },
  );

  it("hands each committed page's events to the service thread's afterCommit", async () => {
    const committed: RecordedEvent[] = [];
    const runner = await startProjectionWorker(
      testDb.db,
      store,
      { ...admissionTrendsProjection, afterCommit: (events) => committed.push(...events) },
      { entry: projectionWorkerEntry(), connection, isolation },
    );
    try {
      await runner.waitForCaughtUp(WAIT);
      committed.length = 0;
      await record([admissionSummary({ tenantId: 'initech', fromSecond: T0 + 120, shedUnits: 4 })]);
      await runner.waitForCaughtUp(WAIT);
      expect(committed).toHaveLength(1);
      expect(committed[0]).toMatchObject({ type: 'AdmissionsRecorded' });
      expect(committed[0]!.dataJson).toContain('initech');
    } finally {
      await runner.stop();
    }
  });

  /** The admission trends in a thread of CRASHING_ENTRY, replaced 50 ms after it ends; `reported()` is every fault told so far. */
  async function startCrashingWorker() {
    const errors: unknown[] = [];
    const runner = await startProjectionWorker(testDb.db, store, admissionTrendsProjection, {
      entry: CRASHING_ENTRY,
      connection,
      isolation,
      retryDelayMs: 50,
      onError: (error) => errors.push(error),
    });
    return { runner, reported: () => errors.map(String).join('\n') };
  }

  it('reports a thread that ended and starts another, which goes on from the checkpoint', async () => {
    const { runner, reported } = await startCrashingWorker();
    try {
      await runner.waitForCaughtUp(WAIT);
      await record([admissionSummary({ tenantId: CRASHING_TENANT, fromSecond: T0 + 180, admittedUnits: 1 })]);
      await expect.poll(reported, { timeout: WAIT.timeoutMs }).toMatch(new RegExp(`worker ${isolation} ended \\(code 1\\); starting another`));
      // The page committed before its thread ended: the next thread does not apply it again.
      await record([admissionSummary({ tenantId: 'after-the-crash', fromSecond: T0 + 180, admittedUnits: 2 })]);
      await runner.waitForCaughtUp(WAIT);
      const { rows } = await testDb.db.query<{ tenant_id: string; admitted_units: string }>(
        `SELECT tenant_id, admitted_units::text FROM ${bucketRows(ADMISSION_TRENDS, 'MINUTE')} AS minutes WHERE tenant_id IN ($1, 'after-the-crash') ORDER BY tenant_id`,
        [CRASHING_TENANT],
      );
      expect(rows).toEqual([
        { tenant_id: 'after-the-crash', admitted_units: '2' },
        { tenant_id: CRASHING_TENANT, admitted_units: '1' },
      ]);
    } finally {
      await runner.stop();
    }
  });

  it('carries a wait over to the next thread when one ends before its page commits; the page is applied once', async () => {
    const markerDir = await mkdtemp(path.join(tmpdir(), 'gl-crash-'));
    const marker = path.join(markerDir, 'crashed');
    process.env.CRASH_MARKER_FILE = marker;
    const { runner, reported } = await startCrashingWorker();
    try {
      await runner.waitForCaughtUp(WAIT);
      await record([admissionSummary({ tenantId: 'crash-before-commit', fromSecond: T0 + 240, admittedUnits: 7 })]);
      // Asked before the thread meets the page: that thread ends, and the next one answers.
      await runner.waitForCaughtUp(WAIT);
      expect(existsSync(marker)).toBe(true);
      expect(reported()).toMatch(new RegExp(`worker ${isolation} ended \\(code 1\\); starting another`));
      const { rows } = await testDb.db.query<{ admitted_units: string }>(
        `SELECT admitted_units::text FROM ${bucketRows(ADMISSION_TRENDS, 'MINUTE')} AS minutes WHERE tenant_id = 'crash-before-commit'`,
      );
      expect(rows).toEqual([{ admitted_units: '7' }]);
    } finally {
      delete process.env.CRASH_MARKER_FILE;
      await runner.stop();
      await rm(markerDir, { recursive: true, force: true });
    }
  });

  it('refuses to start a projection its thread does not serve, saying so', async () => {
    await expect(
      startProjectionWorker(testDb.db, store, { ...admissionTrendsProjection, name: 'no-such-projection' }, { entry: projectionWorkerEntry(), connection, isolation }),
    ).rejects.toThrow(/runs no projection named no-such-projection/);
  });

  it('stops: the worker ends and waits are refused from then on', async () => {
    const before = childProcesses();
    const runner = await startProjectionWorker(testDb.db, store, admissionTrendsProjection, { entry: projectionWorkerEntry(), connection, isolation });
    await runner.waitForCaughtUp(WAIT);
    const started = [...childProcesses()].filter((pid) => !before.has(pid));
    expect(started).toHaveLength(isolation === 'process' ? 1 : 0);
    await runner.stop();
    // A child process has exited (and been reaped) by the time stop() resolves.
    const left = childProcesses();
    expect(started.filter((pid) => left.has(pid))).toEqual([]);
    await expect(runner.waitForCaughtUp()).rejects.toThrow(/is stopped/);
    await runner.stop();
  });
});
