// Retention of the ledger's admission summaries (migration 0100, src/ledger/retention): a day is archived to
// a gzip NDJSON file with a sha256 manifest, read back equal to what was appended, and dropped from the
// ledger, while every other stream stays and the projections and their readiness carry on.
import { ADMISSION_TRENDS, bucketRows } from '../../../src/metrics/index.ts';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { runCli } from '../../support/spawnTs.ts';
import { allProjections } from '../../../projections/index.ts';
import { createControlPlane } from '../../../src/control-plane/controlPlane.ts';
import { ADMISSIONS_STREAM } from '../../../src/ledger/catalog/admissions.ts';
import type { EventStore, RecordedEvent } from '../../../src/ledger/eventStore.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import {
  addDays,
  countUnpartitionedSummaries,
  dayOf,
  ensureSummaryPartitions,
  listSummaryPartitions,
  SUMMARY_EVENT_TYPES,
} from '../../../src/ledger/postgres/summaryPartitions.ts';
import { projectionReadiness } from '../../../src/ledger/projectionReadiness.ts';
import { startProjections, type ProjectionSet } from '../../../src/ledger/projectionSet.ts';
import { ArchiveDamaged, readArchive, verifyArchive } from '../../../src/ledger/retention/archiveFile.ts';
import { archiveSummaryDays, listArchivedDays } from '../../../src/ledger/retention/archiveSummaries.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';
import { OPERATOR, SETUP_TIMEOUT_MS } from '../../support/controlPlaneHarness.ts';
import { describeOnEachStorage, type TestDb } from '../../support/databases.ts';

const HOUR_MS = 3_600_000;

const governance = (args: string[]) => runCli(args);

/** What a reader sees of an event, in a form toEqual compares (the archive keeps recorded times to the microsecond, Dates hold ms). */
const comparable = (event: RecordedEvent) => ({ ...event, recordedAt: event.recordedAt.getTime() });

async function trendRows(testDb: TestDb) {
  const { rows } = await testDb.db.query(
    `SELECT tenant_id, dimension, allowance, bucket_start, admitted_units, shed_units, hits FROM ${bucketRows(ADMISSION_TRENDS, 'MINUTE')} AS minutes
      ORDER BY tenant_id, dimension, allowance, bucket_start`,
  );
  return rows;
}

describeOnEachStorage('admission summary retention on $name', (target) => {
  let testDb: TestDb;
  let store: EventStore;
  let projections: ProjectionSet;
  let dir: string;

  beforeEach(async () => {
    testDb = await target.open();
    // The service's poll interval: nine subscriptions polling faster keep embedded PGlite (on the event
    // loop's thread) so busy that file I/O waits for turns.
    store = createPostgresEventStore(testDb.db);
    projections = await startProjections(testDb.db, store, allProjections(), { retryDelayMs: 50 });
    dir = await mkdtemp(path.join(tmpdir(), 'gl-archive-'));
  }, SETUP_TIMEOUT_MS);

  afterEach(async () => {
    await projections?.close();
    await store?.close();
    await testDb?.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  /** Every projection has applied every event committed so far (the head, not an empty read: see controlPlaneHarness). */
  const caughtUp = async () => {
    await projections.waitForCaughtUp({ timeoutMs: 30_000 });
  };

  it('archives an ended day to a checked file that reads back as appended; the ledger keeps every other stream and the projections carry on', async () => {
    const controlPlane = createControlPlane({ db: testDb.db, store });
    expect(await controlPlane.defineTier(OPERATOR, { tierId: 'silver', name: 'Silver' })).not.toMatchObject({ status: 'failed' });
    expect(await controlPlane.setTierLimit(OPERATOR, { tierId: 'silver', dimension: 'INGEST', ratePerSecond: 5, reason: 'launch' })).not.toMatchObject({
      status: 'failed',
    });
    const recorder = createLedgerRecorder(store, { maxEntriesPerEvent: 7 });
    const second = Math.floor(Date.now() / 1000) - 120;
    const summaries = Array.from({ length: 40 }, (_, i) =>
      admissionSummary({ tenantId: `tenant-${i % 5}`, fromSecond: second + i, admittedUnits: i + 1, shedUnits: i % 3, hitSeconds: i % 3 > 0 ? 1 : 0 }),
    );
    await recorder.record(summaries.slice(0, 20), []);
    await recorder.record(summaries.slice(20), [{ tenantId: 'tenant-9', dimension: 'INGEST', cause: 'unreachable', fromSecond: second, seconds: 1, units: 3, messages: 1 }]);
    await caughtUp();
    const appended = (await store.readAll('start', 10_000, { types: SUMMARY_EVENT_TYPES })).map(comparable);
    expect(appended.length).toBeGreaterThan(5);
    const kept = (await store.readAll('start', 10_000)).filter((event) => event.stream !== ADMISSIONS_STREAM).map(comparable);
    expect(kept.map((event) => event.type)).toEqual(expect.arrayContaining(['TierDefined', 'TierLimitSet']));
    const trendsBefore = await trendRows(testDb);
    expect(trendsBefore.length).toBeGreaterThan(0);

    // Two days later, with one day of retention: today is an ended day older than the retention.
    const today = dayOf(Date.now());
    const later = Date.now() + 2 * 24 * HOUR_MS;
    const outcome = await archiveSummaryDays(testDb.db, { dir, before: addDays(dayOf(later), -1), projections: allProjections(), now: () => later });
    expect(outcome.skipped).toEqual([]);
    expect(outcome.archived.map((each) => each.day)).toContain(today);
    const archived = outcome.archived.find((each) => each.day === today)!;
    expect(archived.file).toBe(path.join(dir, `${ADMISSIONS_STREAM}-${today}.ndjson.gz`));

    // The file: its checksum and count match the manifest, and it reads back as the ledger gave the events.
    const manifest = await verifyArchive(archived.file);
    expect(manifest).toMatchObject({ day: today, events: appended.length, stream: ADMISSIONS_STREAM });
    const readBack: RecordedEvent[] = [];
    for await (const event of readArchive(archived.file)) readBack.push(event);
    expect(readBack.map(comparable)).toEqual(appended);
    expect(await listArchivedDays(testDb.db)).toContainEqual({ day: today, file: archived.file, sha256: manifest.sha256, events: appended.length });

    // The CLI reads the same file back, one JSON line per event.
    const printed = await governance(['ledger', 'read-archive', archived.file]);
    expect(printed.code, printed.stderr).toBe(0);
    const lines = printed.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { id: string; data: unknown });
    expect(lines.map((line) => [line.id, line.data])).toEqual(appended.map((event) => [event.id, event.data]));

    // The live ledger no longer holds that day's summaries; every other stream is intact, whatever its age.
    expect(await store.readAll('start', 10_000, { types: SUMMARY_EVENT_TYPES })).toEqual([]);
    expect(await store.readStream(ADMISSIONS_STREAM)).toEqual([]);
    expect((await listSummaryPartitions(testDb.db)).map((each) => each.day)).not.toContain(today);
    expect((await store.readAll('start', 10_000)).map(comparable)).toEqual(kept);

    // Projections: the trends stay the long-term record, nothing is pending, /readyz's check passes.
    expect(await trendRows(testDb)).toEqual(trendsBefore);
    for (const lag of await projections.lag()) expect(lag, lag.projection).toMatchObject({ pending: false });
    expect(await projectionReadiness(() => projections.lag(), 30)()).toBeNull();

    // Today has no partition now: new summaries go to the default partition (an append never fails for a
    // missing partition), are kept there, and are projected like any other.
    await recorder.record([admissionSummary({ tenantId: 'tenant-0', fromSecond: second + 50, admittedUnits: 1000 })], []);
    expect(await countUnpartitionedSummaries(testDb.db)).toBe(1);
    expect(await ensureSummaryPartitions(testDb.db)).not.toContain(today);
    await caughtUp();
    const { rows } = await testDb.db.query<{ admitted: string }>(
      // The day's rows with the minutes not yet rolled up into them.
      `SELECT sum(admitted_units)::text AS admitted FROM ${bucketRows(ADMISSION_TRENDS, 'DAY')} AS days WHERE tenant_id = 'tenant-0'`,
    );
    expect(Number(rows[0]!.admitted)).toBe(1000 + summaries.filter((each) => each.tenantId === 'tenant-0').reduce((sum, each) => sum + each.admittedUnits, 0));
  }, 240_000);

  it('refuses a damaged file, and keeps a day a projection has not applied yet', async () => {
    const recorder = createLedgerRecorder(store);
    // One instant for the summary and for every day the test names, so a run across midnight names one day.
    const recordedAt = Date.now();
    const today = dayOf(recordedAt);
    await recorder.record([admissionSummary({ fromSecond: Math.floor(recordedAt / 1000), admittedUnits: 3 })], []);
    await caughtUp();
    await projections.close();
    // A projection of summaries that has not applied the day (here: never ran): the day stays.
    await testDb.db.query("UPDATE gl_checkpoints SET commit_position = NULL, prepare_position = NULL WHERE projection = 'admission-trends'");
    const later = recordedAt + 2 * 24 * HOUR_MS;
    const held = await archiveSummaryDays(testDb.db, { dir, before: dayOf(later), projections: allProjections(), now: () => later });
    expect(held.archived.map((each) => each.day)).not.toContain(today);
    expect(held.skipped).toContainEqual({ day: today, reason: 'not yet applied by admission-trends' });
    expect(await store.readAll('start', 100, { types: SUMMARY_EVENT_TYPES })).toHaveLength(1);

    projections = await startProjections(testDb.db, store, allProjections(), { retryDelayMs: 50 });
    await caughtUp();
    const outcome = await archiveSummaryDays(testDb.db, { dir, before: dayOf(later), projections: allProjections(), now: () => later });
    const { file } = outcome.archived.find((each) => each.day === today)!;
    const bytes = await readFile(file);
    bytes[bytes.length - 5]! ^= 0xff;
    await writeFile(file, bytes);
    await expect(verifyArchive(file)).rejects.toBeInstanceOf(ArchiveDamaged);
    const refused = await governance(['ledger', 'read-archive', file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(refused.stderr).toMatch(/sha256 [0-9a-f]{64}, the manifest says/);
  }, 240_000);
});
