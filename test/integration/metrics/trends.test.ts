// The trend read models rebuilt from the ledger: replayed, page by page, into exactly the rows the running
// projections built. What the projections and the trend queries make of the events is
// test/integration/projections/admissionTrends.test.ts, which needs no ledger.
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import type { NewEvent } from '../../../src/ledger/eventStore.ts';
import { startProjections, type ProjectionSet } from '../../../src/ledger/projectionSet.ts';
import { rebuildProjection } from '../../../src/ledger/rebuild.ts';
import { ADMISSIONS_STREAM } from '../../../src/ledger/catalog/admissions.ts';
import type { AdmissionSummary } from '../../../src/governance/index.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { unresolvedAdmissionsProjection } from '../../../projections/unresolvedAdmissions.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { useFileLedger } from '../../support/fileLedger.ts';
import { waitForProjected } from './waitForProjected.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';
import { fanOutRecorder, Governor } from '../../../src/governance/index.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { entriesOf, type AdmissionsRecordedData } from '../../../src/ledger/index.ts';
import { createMetrics, createMetricsRecorder, shedTrend } from '../../../src/metrics/index.ts';
import { MemoryLimitSource } from '../../unit/governance/memoryLimitSource.ts';
import { waitFor } from '../../support/waitFor.ts';

// Each test records into its own 30-day window of one shared database (opening one per test costs more
// than the tests), each window starting two minutes before a day boundary so roll-ups cross an hour and a day.
const EPOCH = Date.UTC(2026, 0, 1, 23, 58, 0) / 1000;
let windowIndex = 0;
let T0 = EPOCH;

function admission(overrides: Partial<AdmissionSummary>): AdmissionSummary {
  return admissionSummary({ fromSecond: T0, ...overrides });
}

const PROJECTIONS = [admissionTrendsProjection, unresolvedAdmissionsProjection];

describeOnEachStorage('trend read models rebuilt from the ledger on $name', (target) => {
  const ledger = useFileLedger(target);
  let projections: ProjectionSet;

  beforeAll(async () => {
    projections = await startProjections(ledger.db, ledger.store, PROJECTIONS);
    windowIndex = 0;
  }, 180_000);

  beforeEach(() => {
    T0 = EPOCH + 30 * 86_400 * windowIndex++;
  });

  afterAll(async () => {
    await projections.close();
  });

  async function record(entries: AdmissionSummary[]) {
    const events: NewEvent[] = [{ type: 'AdmissionsRecorded', data: { entries } }];
    const { position } = await ledger.store.append(ADMISSIONS_STREAM, events);
    await waitForProjected(ledger.db, projections, position);
    return position;
  }

  it('counts quota refusals recorded by the Governor as the ledger and /metrics do: a part of rejected', async () => {
    // A daily quota of 5 readings; 8 offered: 3 refused for the quota (HTTP 429, X-RateLimit-Scope: quota).
    const tenantId = `quota-${windowIndex}`;
    const metrics = createMetrics({ service: 'quota-trend-test', processMetrics: false });
    const source = new MemoryLimitSource().tenant(tenantId, {
      INGEST: { override: { ratePerSecond: 100_000, burst: 100_000, quota: { period: 'DAY', limit: 5 } } },
    });
    const governor = new Governor({
      limitSource: source,
      recorder: fanOutRecorder(createLedgerRecorder(ledger.store, { referenceKeys: true }), createMetricsRecorder(metrics)),
    });
    governor.learnLimits(source.records.values(), {});
    const fromMs = Math.floor(Date.now() / 1000) * 1000 - 120_000;
    const decisions = Array.from({ length: 8 }, (_, i) => governor.admit({ tenant: tenantId, dimension: 'INGEST', allowance: 'LIVE', units: 1, at: fromMs + i * 100 }));
    expect(decisions.filter((decision) => decision.admitted)).toHaveLength(5);
    expect(decisions.filter((decision) => decision.quotaExceeded)).toHaveLength(3);
    await governor.flush();
    await governor.close();

    const summaries = (await ledger.store.readStream(ADMISSIONS_STREAM))
      .flatMap((event) => entriesOf(event.data as AdmissionsRecordedData))
      .filter((entry) => entry.tenantId === tenantId);
    const ledgerUnits = summaries.reduce((sum, entry) => sum + (entry.quotaRejectedUnits ?? 0), 0);
    const ledgerMessages = summaries.reduce((sum, entry) => sum + (entry.quotaRejectedMessages ?? 0), 0);
    expect([ledgerUnits, ledgerMessages]).toEqual([3, 3]);

    const query = { tenantId, dimension: 'INGEST', from: new Date(fromMs - 60_000), to: new Date(fromMs + 120_000), bucket: 'MINUTE' } as const;
    let points: Awaited<ReturnType<typeof shedTrend>> = [];
    await waitFor(
      async () => {
        points = await shedTrend(ledger.db, query);
        return points.reduce((sum, point) => sum + point.quotaRejected, 0) === ledgerUnits;
      },
      { timeoutMs: 30_000, description: 'trend with the quota-rejected units' },
    );
    const total = (field: 'quotaRejected' | 'quotaRejectedMessages' | 'rejected' | 'rejectedMessages' | 'admitted') => points.reduce((sum, point) => sum + point[field], 0);
    expect(total('quotaRejectedMessages')).toBe(ledgerMessages);
    // A part of rejected: here the quota refused all of it.
    expect([total('rejected'), total('rejectedMessages'), total('admitted')]).toEqual([3, 3, 5]);

    const line = (await metrics.render())
      .split('\n')
      .find((each) => each.includes('governance_quota_rejected_units_total{') && each.includes(`tenant="${tenantId}"`));
    expect(Number(line?.split(' ').at(-1))).toBe(total('quotaRejected'));
  });

  it('rebuilds from the ledger into the same rows', async () => {
    await record([admission({ fromSecond: T0 + 30, seconds: 90, admittedUnits: 91, shedUnits: 13, hitSeconds: 7 })]);
    const last = await record([admission({ tenantId: 'b', allowance: 'HTTP', admittedUnits: 4 })]);
    const dump = async () =>
      // This test's window only.
      (await ledger.db.query('SELECT * FROM gl_admission_trends_minute WHERE bucket_start >= to_timestamp($1) ORDER BY 1, 2, 3, 4', [T0 - 86_400])).rows.concat(
        (await ledger.db.query('SELECT * FROM gl_admission_trends_day WHERE bucket_start >= to_timestamp($1) ORDER BY 1, 2, 3, 4', [T0 - 86_400])).rows,
      );
    const before = await dump();
    await projections.close();
    await rebuildProjection(ledger.db, ledger.store, admissionTrendsProjection);
    // The rebuild replays what the ledger shows now; an open transaction elsewhere on the server may hold
    // the newest events back, and the restarted runner applies them from the rebuilt checkpoint.
    projections = await startProjections(ledger.db, ledger.store, PROJECTIONS);
    await waitForProjected(ledger.db, projections, last);
    expect(await dump()).toEqual(before);
  });

  it('a rebuild that merges whole pages of summaries writes exactly the rows built summary by summary', async () => {
    // Every summary touches rows earlier ones touched (same tenants, allowances and minutes), some cross
    // minute, hour and day boundaries, so merging a page's increments per row is really exercised.
    let last = await record([admission({ admittedUnits: 1 })]);
    for (let i = 0; i < 16; i++) {
      const entries = ['acme', 'b', 'c'].flatMap((tenantId, t) =>
        (['LIVE', 'HTTP'] as const).map((allowance, a) =>
          admission({
            tenantId,
            allowance,
            fromSecond: T0 + 20 * i + t,
            seconds: (i + a) % 5 === 0 ? 75 : 1,
            admittedUnits: 3 * i + t + a,
            admittedMessages: i + 1,
            shedUnits: (i * 7 + t) % 4,
            shedMessages: (i + t) % 2,
            rejectedUnits: (i + a) % 3,
            rejectedMessages: (i + a) % 2,
            hitSeconds: (i + t + a) % 3,
          }),
        ),
      );
      // One summary at a time, each projected before the next: the incremental build, one event per page.
      last = await record(entries);
    }
    const dump = async () => {
      const rows: unknown[] = [];
      for (const table of ['gl_admission_trends_minute', 'gl_admission_trends_hour', 'gl_admission_trends_day']) {
        const { rows: tableRows } = await ledger.db.query(`SELECT * FROM ${table} WHERE bucket_start >= to_timestamp($1) ORDER BY 1, 2, 3, 4`, [T0 - 86_400]);
        rows.push(table, ...tableRows);
      }
      // How far minutes are rolled up into hours and days: the hour and day rows above depend on it.
      rows.push((await ledger.db.query('SELECT rolled_through FROM gl_admission_trends_rolled')).rows);
      return rows;
    };
    const incremental = await dump();
    expect(incremental.length).toBeGreaterThan(3 + 6 * 3);
    await projections.close();
    // Pages of many summaries: each page's increments are merged per row before one upsert.
    await rebuildProjection(ledger.db, ledger.store, admissionTrendsProjection, { pageSize: 1_000 });
    projections = await startProjections(ledger.db, ledger.store, PROJECTIONS);
    await waitForProjected(ledger.db, projections, last);
    expect(await dump()).toEqual(incremental);
  });
});
