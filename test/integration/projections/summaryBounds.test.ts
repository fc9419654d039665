// The trend projections' bounds (src/metrics/trends/summaryBounds.ts): an event with a summary spanning more than
// a day, starting outside 1970..9999, or crossing more than MAX_EVENT_MINUTE_ROWS minutes in all is refused whole
// with its reason and nothing of it is written, while the events beside it in the page are; and a page of wide
// summaries is written in several statements (the admission trends' FLUSH_ROWS) with every unit in its minute,
// hour and day.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../../src/ledger/eventStore.ts';
import type { Projection, Refusal } from '../../../src/ledger/projection.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { unresolvedAdmissionsProjection } from '../../../projections/unresolvedAdmissions.ts';
import { inferenceSpendProjection } from '../../../projections/inferenceSpend.ts';
import { ADMISSION_TRENDS, bucketRows, MAX_EVENT_MINUTE_ROWS, MAX_SUMMARY_SECONDS } from '../../../src/metrics/index.ts';
import { shedTrend } from '../../../src/metrics/trends/shedTrend.ts';
import { storageTargets, type TestDb } from '../../support/databases.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';

const T0 = Date.UTC(2026, 2, 1, 0, 0, 0) / 1000;
let position = 0n;

function event(type: string, data: unknown): RecordedEvent {
  position++;
  return { id: randomUUID(), stream: 'spec', revision: position, position: { commit: position, prepare: position }, type, data, metadata: {}, recordedAt: new Date() };
}

const reasonsOf = (refusals: void | readonly Refusal[]) => (refusals ?? []).map((refusal) => [refusal.event.id, refusal.reason]);

describe.each(storageTargets)('trend projection bounds on $name', (target) => {
  let testDb: TestDb;
  beforeAll(async () => {
    testDb = await target.open();
  }, 120_000);
  afterAll(async () => {
    await testDb?.dispose();
  });

  const applyPage = (projection: Projection, events: RecordedEvent[]) => testDb.db.transaction((tx) => projection.applyPage!(events, tx));
  // The minute rows, the open minutes' too (openMinutes.ts).
  const MINUTES = bucketRows(ADMISSION_TRENDS, 'MINUTE');
  const total = async (table: string, column: string, tenant: string) =>
    Number((await testDb.db.query<{ total: string | null }>(`SELECT sum(${column})::text AS total FROM ${table} AS rows WHERE tenant_id = $1`, [tenant])).rows[0]!.total ?? 0);

  it('admission trends: refuses an event with a summary over a day or outside 1970..9999, and applies the rest of the page', async () => {
    const good = event('AdmissionsRecorded', { entries: [admissionSummary({ tenantId: 'good', fromSecond: T0, seconds: MAX_SUMMARY_SECONDS, admittedUnits: 1_440 })] });
    const long = event('AdmissionsRecorded', {
      entries: [admissionSummary({ tenantId: 'fine', fromSecond: T0, admittedUnits: 1 }), admissionSummary({ tenantId: 'long', fromSecond: T0, seconds: MAX_SUMMARY_SECONDS + 1 })],
    });
    const late = event('AdmissionsRecorded', { entries: [admissionSummary({ tenantId: 'late', fromSecond: 1e13, admittedUnits: 1 })] });
    const after = event('AdmissionsRecorded', { entries: [admissionSummary({ tenantId: 'after', fromSecond: T0 + 5, admittedUnits: 7 })] });
    const refusals = await applyPage(admissionTrendsProjection, [good, long, late, after]);
    expect(reasonsOf(refusals)).toEqual([
      [long.id, 'summary 1: a summary spans 86401 s, more than the 86400 s a trend splits across minutes'],
      [late.id, 'summary 0: a summary starts at second 10000000000000, outside 0..253402300799 (1970 to 9999)'],
    ]);
    expect(await total(MINUTES, 'admitted_units', 'good')).toBe(1_440);
    expect(await total(MINUTES, 'admitted_units', 'after')).toBe(7);
    // Nothing of a refused event: not even its summary within the bounds.
    for (const tenant of ['fine', 'long', 'late']) expect(await total(MINUTES, 'admitted_units', tenant)).toBe(0);
    // apply (one event) answers the refusal too.
    expect(await testDb.db.transaction((tx) => admissionTrendsProjection.apply(long, tx))).toEqual({ refused: reasonsOf(refusals)[0]![1] });
  });

  it('admission trends: refuses an event whose summaries cross more minute rows than an event may', async () => {
    const summaries = Math.ceil(MAX_EVENT_MINUTE_ROWS / 1_441) + 1;
    const wide = event('AdmissionsRecorded', {
      fields: ['tenantId', 'dimension', 'allowance', 'fromSecond', 'seconds', 'admittedUnits'],
      rows: Array.from({ length: summaries }, (_, index) => [`wide-${index}`, 'INGEST', 'LIVE', T0 + 30, MAX_SUMMARY_SECONDS, 1]),
    });
    const refusals = await applyPage(admissionTrendsProjection, [wide]);
    expect(reasonsOf(refusals)).toEqual([[wide.id, `its summaries cross ${summaries * 1_441} minute rows, more than the ${MAX_EVENT_MINUTE_ROWS} an event may`]]);
  });

  it('admission trends: a page of day-long summaries is written in several statements, every unit in its minute, hour and day', async () => {
    // 100 tenants' summaries of a day each, 25 an event: 144,100 minute rows, more than a statement carries
    // (the first three events' rows are written, then the fourth's).
    const tenants = Array.from({ length: 100 }, (_, index) => `wide-${String(index).padStart(3, '0')}`);
    const events = Array.from({ length: 4 }, (_, page) =>
      event('AdmissionsRecorded', {
        entries: tenants.slice(page * 25, page * 25 + 25).map((tenantId, index) =>
          admissionSummary({ tenantId, fromSecond: T0 + 86_400 * 10 + index, seconds: 86_400, admittedUnits: 86_400 }),
        ),
      }),
    );
    expect(reasonsOf(await applyPage(admissionTrendsProjection, events))).toEqual([]);
    const minutes = await testDb.db.query<{ rows: string; total: string }>(
      `SELECT count(*)::text AS rows, sum(admitted_units)::text AS total FROM ${MINUTES} AS minutes WHERE tenant_id LIKE 'wide-%'`,
    );
    expect(minutes.rows[0]).toEqual({ rows: String(100 * 1_441 - 4), total: String(100 * 86_400) });
    const range = { dimension: 'INGEST' as const, from: new Date((T0 + 86_400 * 9) * 1000), to: new Date((T0 + 86_400 * 13) * 1000) };
    const sum = (points: { admitted: number }[]) => points.reduce((all, point) => all + point.admitted, 0);
    // The first tenant, the last of the first statement, the first of the second, the last.
    for (const tenantId of ['wide-000', 'wide-074', 'wide-075', 'wide-099']) {
      expect(sum(await shedTrend(testDb.db, { ...range, tenantId, bucket: 'MINUTE' })), tenantId).toBe(86_400);
      expect(sum(await shedTrend(testDb.db, { ...range, tenantId, bucket: 'HOUR' })), tenantId).toBe(86_400);
      expect(sum(await shedTrend(testDb.db, { ...range, tenantId, bucket: 'DAY' })), tenantId).toBe(86_400);
    }
  }, 120_000);

  it('unresolved admissions and inference spend: refuse an event with a summary over a day, and apply the rest', async () => {
    const unresolvedGood = event('UnresolvedAdmissionsRecorded', {
      entries: [{ tenantId: 'u-good', dimension: 'INGEST', cause: 'unreachable', fromSecond: T0, seconds: 120, units: 4, messages: 2 }],
    });
    const unresolvedLong = event('UnresolvedAdmissionsRecorded', {
      entries: [{ tenantId: 'u-long', dimension: 'INGEST', cause: 'unreachable', fromSecond: 0, seconds: 1_000_000_000_000, units: 4, messages: 2 }],
    });
    expect(reasonsOf(await applyPage(unresolvedAdmissionsProjection, [unresolvedLong, unresolvedGood]))).toEqual([
      [unresolvedLong.id, 'summary 0: a summary spans 1000000000000 s, more than the 86400 s a trend splits across minutes'],
    ]);
    expect(await total('gl_unresolved_admissions_minute', 'units', 'u-good')).toBe(4);
    expect(await total('gl_unresolved_admissions_minute', 'units', 'u-long')).toBe(0);

    const spendGood = event('InferenceSpendRecorded', { entries: [{ tenantId: 's-good', fromSecond: T0, seconds: 1, inputTokens: 10, outputTokens: 5, requests: 1 }] });
    const spendLong = event('InferenceSpendRecorded', {
      entries: [{ tenantId: 's-long', fromSecond: T0 - 30 * 86_400, seconds: 30 * 86_400, inputTokens: 10, outputTokens: 5, requests: 1 }],
    });
    expect(reasonsOf(await applyPage(inferenceSpendProjection, [spendGood, spendLong]))).toEqual([
      [spendLong.id, 'entry 0: a summary spans 2592000 s, more than the 86400 s a trend splits across minutes'],
    ]);
    expect(await total('gl_inference_spend_minute', 'input_tokens', 's-good')).toBe(10);
    expect(await total('gl_inference_spend_minute', 'input_tokens', 's-long')).toBe(0);
  });
});
