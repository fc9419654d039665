// The trend read models from the events alone: what the admission-trends and unresolved-admissions projections
// make of AdmissionsRecorded and UnresolvedAdmissionsRecorded, and what the trend queries (src/metrics/trends)
// answer from it. Rebuilding them from the ledger is test/integration/metrics/trends.test.ts.
import { beforeEach, expect, it } from 'vitest';
import type { AdmissionSummary, UnresolvedAdmissionSummary } from '../../../src/governance/index.ts';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { unresolvedAdmissionsProjection } from '../../../projections/unresolvedAdmissions.ts';
import { shedTrend } from '../../../src/metrics/trends/shedTrend.ts';
import { topShedders } from '../../../src/metrics/trends/topShedders.ts';
import { unresolvedAdmissions } from '../../../src/metrics/trends/unresolvedAdmissions.ts';
import { PRUNE_BATCH_ROWS, pruneTrends } from '../../../src/metrics/trends/pruneTrends.ts';
import { InvalidTrendQuery } from '../../../src/metrics/trends/trendQuery.ts';
import { bucketRows, rollUpMinutes, RollupRows } from '../../../src/metrics/trends/upsertRollups.ts';
import { ADMISSION_TRENDS, openMarkTable, openTable } from '../../../src/metrics/trends/rollupFamily.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { useProjectionSpec } from '../../support/projectionSpec.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';

// Each test records into its own 30-day window of one shared database (opening one per test costs more
// than the tests), each window starting two minutes before a day boundary so roll-ups cross an hour and a
// day. The pruning test owns the earliest window, so it never removes another test's rows.
const EPOCH = Date.UTC(2026, 0, 1, 23, 58, 0) / 1000;
let windowIndex = 0;
let T0 = EPOCH;
const at = (second: number) => new Date(second * 1000);

function admission(overrides: Partial<AdmissionSummary>): AdmissionSummary {
  return admissionSummary({ fromSecond: T0, ...overrides });
}

function unresolved(overrides: Partial<UnresolvedAdmissionSummary>): UnresolvedAdmissionSummary {
  return { tenantId: 'acme', dimension: 'INGEST', cause: 'unreachable', fromSecond: T0, seconds: 1, units: 0, messages: 0, ...overrides };
}

describeOnEachStorage('trend read models from their events on $name', (target) => {
  const spec = useProjectionSpec(target, admissionTrendsProjection, unresolvedAdmissionsProjection);

  beforeEach(async () => {
    T0 = EPOCH + 30 * 86_400 * windowIndex++;
    // The window before left its newest minutes open (openMinutes.ts), and a roll-up stops before the oldest open
    // minute: each window starts with none (and no mark, so the projection reads the packed rows again: none).
    await spec.db.exec(`DELETE FROM ${openTable(ADMISSION_TRENDS)}; DELETE FROM ${openMarkTable(ADMISSION_TRENDS)};`);
  });

  async function record(entries: AdmissionSummary[], unresolvedEntries: UnresolvedAdmissionSummary[] = []) {
    await spec.given(
      { type: 'AdmissionsRecorded', data: { entries } },
      ...(unresolvedEntries.length > 0 ? [{ type: 'UnresolvedAdmissionsRecorded', data: { entries: unresolvedEntries } }] : []),
    );
  }

  it('prunes each bucket size by its own retention', async () => {
    const now = at(T0);
    await record([
      admission({ fromSecond: T0 - 8 * 86_400, admittedUnits: 1 }),
      admission({ fromSecond: T0 - 3600, admittedUnits: 2 }),
    ]);
    await pruneTrends(spec.db, { MINUTE: 7, HOUR: 90, DAY: 730 }, now);
    const minutes = await shedTrend(spec.db, { tenantId: 'acme', dimension: 'INGEST', from: at(T0 - 10 * 86_400), to: now, bucket: 'MINUTE' });
    expect(minutes.map((point) => point.admitted)).toEqual([2]);
    const hours = await shedTrend(spec.db, { tenantId: 'acme', dimension: 'INGEST', from: at(T0 - 10 * 86_400), to: now, bucket: 'HOUR' });
    expect(hours.map((point) => point.admitted)).toEqual([1, 2]);
    await pruneTrends(spec.db, { MINUTE: 1, HOUR: 1, DAY: 1 }, now);
    const days = await shedTrend(spec.db, { tenantId: 'acme', dimension: 'INGEST', from: at(T0 - 10 * 86_400), to: now, bucket: 'DAY' });
    expect(days.map((point) => point.admitted)).toEqual([2]);
  });

  it('prunes more rows than one batch, a batch per statement', async () => {
    // Years before every test's window, so no other test's rows are old enough to go.
    await spec.db.query(
      `INSERT INTO gl_admission_trends_hour (tenant_id, dimension, bucket_start, allowance, admitted_units, admitted_messages, shed_units, shed_messages, rejected_units, rejected_messages, hits)
       SELECT 'bulk-' || i, 'INGEST', timestamptz '2020-06-01 00:00Z', '', 1, 1, 0, 0, 0, 0, 1 FROM generate_series(1, $1::int) AS i`,
      [PRUNE_BATCH_ROWS * 2 + 1],
    );
    expect(await pruneTrends(spec.db, { MINUTE: 1, HOUR: 1, DAY: 1 }, new Date(Date.UTC(2021, 0, 1)))).toBe(PRUNE_BATCH_ROWS * 2 + 1);
    const { rows } = await spec.db.query<{ n: string }>("SELECT count(*)::text AS n FROM gl_admission_trends_hour WHERE tenant_id LIKE 'bulk-%'");
    expect(rows[0]!.n).toBe('0');
  });

  it("gives a large page's statement memory to sort and hash in (work_mem), for its own transaction only", async () => {
    const workMem = async (query: (sql: string) => Promise<{ rows: { work_mem: string }[] }>) => (await query('SHOW work_mem')).rows[0]!.work_mem;
    const before = await workMem((sql) => spec.db.query(sql));
    const rows = new RollupRows(ADMISSION_TRENDS);
    const counts = ADMISSION_TRENDS.counts.map(() => 1);
    for (let i = 0; i < 20_000; i++) rows.addValues([`memory-${i}`, 'INGEST', 'LIVE'], T0, counts);
    const inside = await spec.db.transaction(async (tx) => {
      await rows.upsert(tx);
      return workMem((sql) => tx.query(sql));
    });
    // About a kB a row (20,000 rows: 20,000 kB), where PostgreSQL's default 4 MB spilled a page of 50,000 to disk.
    expect(inside).toBe('20000kB');
    expect(await workMem((sql) => spec.db.query(sql))).toBe(before);
    const { rows: stored } = await spec.db.query<{ n: string }>("SELECT count(*)::text AS n FROM gl_admission_trends_minute WHERE tenant_id LIKE 'memory-%'");
    expect(stored[0]!.n).toBe('20000');
  });

  it('counts per minute summed over allowances, and rolls up to hours and days', async () => {
    await record([
      admission({ allowance: 'LIVE', admittedUnits: 100, shedUnits: 20, hitSeconds: 1 }),
      admission({ allowance: 'HTTP', fromSecond: T0 + 5, admittedUnits: 10, rejectedUnits: 3, hitSeconds: 1 }),
      admission({ allowance: 'LIVE', fromSecond: T0 + 60, admittedUnits: 50 }),
      admission({ tenantId: 'other-tenant', admittedUnits: 999, shedUnits: 999 }),
      admission({ dimension: 'EGRESS', allowance: 'DETECTION', admittedUnits: 7, shedUnits: 7 }),
    ]);
    // Recorded later, same minute: adds to what is there.
    await record([admission({ allowance: 'LIVE', fromSecond: T0 + 30, admittedUnits: 1, shedUnits: 1, hitSeconds: 1 })]);

    const query = { tenantId: 'acme', dimension: 'INGEST' as const, from: at(T0), to: at(T0 + 3 * 3600) };
    expect(await shedTrend(spec.db, { ...query, bucket: 'MINUTE' })).toMatchObject([
      { start: at(T0), admitted: 111, shed: 21, rejected: 3, hits: 3 },
      { start: at(T0 + 60), admitted: 50, shed: 0, rejected: 0, hits: 0 },
    ]);
    expect(await shedTrend(spec.db, { ...query, bucket: 'HOUR' })).toMatchObject([{ start: at(T0 - 58 * 60), admitted: 161, shed: 21, rejected: 3, hits: 3 }]);
    expect(await shedTrend(spec.db, { ...query, from: at(T0 - 86_400), bucket: 'DAY' })).toMatchObject([
      { start: at(T0 - (23 * 3600 + 58 * 60)), admitted: 161, shed: 21, rejected: 3, hits: 3 },
    ]);
  });

  it('rolls minutes up into hours and days once a minute past, reads them whole before, and counts a late summary once', async () => {
    const hourOf = (second: number) => second - (second % 3600);
    const stored = async (table: string) =>
      (await spec.db.query<{ admitted: string }>(`SELECT admitted_units AS admitted FROM ${table} WHERE tenant_id = 'acme' AND bucket_start = to_timestamp($1)`, [hourOf(T0)])).rows.map(
        (row) => Number(row.admitted),
      );
    const hours = async () =>
      (await shedTrend(spec.db, { tenantId: 'acme', dimension: 'INGEST', from: at(hourOf(T0)), to: at(hourOf(T0) + 3600), bucket: 'HOUR' })).map((point) => point.admitted);
    await record([admission({ admittedUnits: 5 })]);
    // Not rolled up yet: the hour reads whole from its minutes.
    expect(await stored('gl_admission_trends_hour')).toEqual([]);
    expect(await hours()).toEqual([5]);
    // A summary two minutes on rolls T0's minute up, which is kept as a minute too (4 units over 23:59:59 and 00:00:00).
    await record([admission({ fromSecond: T0 + 60, admittedUnits: 1 }), admission({ fromSecond: T0 + 100, admittedUnits: 2 })]);
    expect(await stored('gl_admission_trends_hour')).toEqual([]);
    await record([admission({ fromSecond: T0 + 119, admittedUnits: 4, seconds: 2 })]);
    expect(await stored('gl_admission_trends_hour')).toEqual([5]);
    expect(await hours()).toEqual([5 + 1 + 2 + 2]);
    const rolled = await spec.db.query<{ through: string }>('SELECT rolled_through AS through FROM gl_admission_trends_rolled');
    expect(rolled.rows.map((row) => Number(row.through))).toEqual([T0 + 60]);
    // A late summary for the minute already rolled up counts in the minute, the hour and the day, once.
    await record([admission({ fromSecond: T0 + 5, admittedUnits: 7 })]);
    expect(await stored('gl_admission_trends_hour')).toEqual([12]);
    expect(await hours()).toEqual([12 + 1 + 2 + 2]);
    const minutes = await shedTrend(spec.db, { tenantId: 'acme', dimension: 'INGEST', from: at(T0), to: at(T0 + 180), bucket: 'MINUTE' });
    expect(minutes.map((point) => point.admitted)).toEqual([12, 5, 2]);
    const days = await shedTrend(spec.db, { tenantId: 'acme', dimension: 'INGEST', from: at(T0 - 86_400), to: at(T0 + 86_400), bucket: 'DAY' });
    expect(days.map((point) => point.admitted)).toEqual([12 + 5, 2]);
  });

  it('counts every increment once in its minute, hour and day however pages and roll-ups interleave, late ones too', async () => {
    // Pages and roll-ups on connections of their own, at once (as a runner's background roll-up and its next page,
    // or two replicas). Each page adds to minutes around a clock that moves a minute every few pages, some minutes
    // behind it, so that increments land before, at and after the mark as a roll-up moves it.
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % below;
    };
    const tenants = ['race-a', 'race-b', 'race-c'];
    const expected = { MINUTE: new Map<string, number>(), HOUR: new Map<string, number>(), DAY: new Map<string, number>() };
    const add = (bucket: keyof typeof expected, key: string, units: number) => expected[bucket].set(key, (expected[bucket].get(key) ?? 0) + units);
    const PAGES = 60;
    let rollUps = 0;
    let pagesDone = false;
    const pages = (async () => {
      for (let page = 0; page < PAGES; page++) {
        const rows = new RollupRows(ADMISSION_TRENDS);
        const clock = T0 + 60 * Math.floor(page / 3);
        for (let i = 0; i < 6; i++) {
          const tenant = tenants[random(tenants.length)]!;
          const minute = Math.max(T0, clock - 60 * random(4));
          const units = 1 + random(9);
          rows.addValues([tenant, 'INGEST', 'LIVE'], minute, ADMISSION_TRENDS.counts.map((count) => (count === 'admitted_units' ? units : 0)));
          add('MINUTE', `${tenant} ${minute}`, units);
          add('HOUR', `${tenant} ${minute - (minute % 3_600)}`, units);
          add('DAY', `${tenant} ${minute - (minute % 86_400)}`, units);
        }
        await spec.db.transaction((tx) => rows.upsert(tx));
      }
      pagesDone = true;
    })();
    const rollingUp = (async () => {
      while (!pagesDone) {
        await rollUpMinutes(spec.db, ADMISSION_TRENDS);
        rollUps++;
      }
    })();
    await Promise.all([pages, rollingUp, rollUpMinutes(spec.db, ADMISSION_TRENDS)]);
    expect(rollUps).toBeGreaterThan(2);

    const read = async (relation: string) => {
      const { rows } = await spec.db.query<{ tenant: string; start: string; units: string }>(
        `SELECT tenant_id AS tenant, extract(epoch FROM bucket_start)::bigint::text AS start, sum(admitted_units)::text AS units
           FROM ${relation} AS r WHERE tenant_id LIKE 'race-%' AND bucket_start >= to_timestamp($1) GROUP BY 1, 2`,
        [T0 - 86_400],
      );
      return new Map(rows.map((row) => [`${row.tenant} ${row.start}`, Number(row.units)]));
    };
    for (const bucket of ['MINUTE', 'HOUR', 'DAY'] as const) expect(await read(bucketRows(ADMISSION_TRENDS, bucket))).toEqual(expected[bucket]);
    // And what the hour table holds is exactly the minutes before the mark, each once.
    const mark = Number((await spec.db.query<{ through: string }>('SELECT rolled_through AS through FROM gl_admission_trends_rolled')).rows[0]!.through);
    expect(mark).toBeGreaterThan(T0);
    const rolledUp = new Map<string, number>();
    for (const [key, units] of expected.MINUTE) {
      const [tenant, minute] = key.split(' ');
      if (Number(minute) < mark) rolledUp.set(`${tenant} ${Number(minute) - (Number(minute) % 3_600)}`, (rolledUp.get(`${tenant} ${Number(minute) - (Number(minute) % 3_600)}`) ?? 0) + units);
    }
    expect(await read('gl_admission_trends_hour')).toEqual(rolledUp);
  });

  it('holds a roll-up back while a page that may add to its minutes is open, so neither loses the other', async () => {
    const units = (value: number) => ADMISSION_TRENDS.counts.map((count) => (count === 'admitted_units' ? value : 0));
    const page = (minute: number, value: number) => {
      const rows = new RollupRows(ADMISSION_TRENDS);
      rows.addValues(['held', 'INGEST', 'LIVE'], minute, units(value));
      return rows;
    };
    await spec.db.transaction((tx) => page(T0, 5).upsert(tx));
    await spec.db.transaction((tx) => page(T0 + 120, 1).upsert(tx));
    // A page adding 7 to minute T0 is open (written, not committed) when the roll-up of T0's minute starts.
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => (commit = resolve));
    let written!: () => void;
    const isWritten = new Promise<void>((resolve) => (written = resolve));
    const open = spec.db.transaction(async (tx) => {
      await page(T0, 7).upsert(tx);
      written();
      await committing;
    });
    await isWritten;
    let rolledUp = false;
    const rollUp = rollUpMinutes(spec.db, ADMISSION_TRENDS).then((seconds) => {
      rolledUp = true;
      return seconds;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(rolledUp).toBe(false);
    commit();
    await open;
    expect(await rollUp).toBeGreaterThan(0);
    const hour = T0 - (T0 % 3_600);
    const { rows } = await spec.db.query<{ units: string }>(
      "SELECT admitted_units::text AS units FROM gl_admission_trends_hour WHERE tenant_id = 'held' AND bucket_start = to_timestamp($1)",
      [hour],
    );
    expect(rows.map((row) => Number(row.units))).toEqual([12]);
  });

  it('lets a page of later minutes commit while a roll-up is rolling up, and holds a late page back until it has', async () => {
    const units = (value: number) => ADMISSION_TRENDS.counts.map((count) => (count === 'admitted_units' ? value : 0));
    const page = (minute: number, value: number) => {
      const rows = new RollupRows(ADMISSION_TRENDS);
      rows.addValues(['rolling', 'INGEST', 'LIVE'], minute, units(value));
      return spec.db.transaction((tx) => rows.upsert(tx));
    };
    await page(T0, 5);
    await page(T0 + 120, 1);
    // A roll-up of T0's minute (up to T0 + 60) has added it to the hours and is held before its commit.
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => (commit = resolve));
    let rolling!: () => void;
    const isRolling = new Promise<void>((resolve) => (rolling = resolve));
    const rollUp = rollUpMinutes(spec.db, ADMISSION_TRENDS, {
      beforeCommit: async () => {
        rolling();
        await committing;
      },
    });
    await isRolling;
    // PGlite has one connection: the roll-up's transaction holds it, so nothing else can run beside it there.
    if (spec.db.kind === 'postgres') {
      // The roll-up is let go whatever happens, so a failure here does not hold the tests after it.
      try {
        // The live page (minutes from T0 + 60 on) commits while the roll-up is open.
        await page(T0 + 120, 2);
        // The late page (minute T0, before the roll-up's mark) waits for it.
        let lateDone = false;
        const late = page(T0, 7).then(() => (lateDone = true));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(lateDone).toBe(false);
        commit();
        await late;
      } finally {
        commit();
      }
    } else {
      commit();
      await page(T0 + 120, 2);
      await page(T0, 7);
    }
    expect(await rollUp).toBeGreaterThan(0);
    const read = async (relation: string, start: number) =>
      (
        await spec.db.query<{ units: string }>(
          `SELECT admitted_units::text AS units FROM ${relation} WHERE tenant_id = 'rolling' AND bucket_start = to_timestamp($1)`,
          [start],
        )
      ).rows.map((row) => Number(row.units));
    // The late 7 came after the roll-up: into its minute, and (its minute being rolled up) into the hour too.
    expect(await read('gl_admission_trends_minute', T0)).toEqual([12]);
    expect(await read('gl_admission_trends_minute', T0 + 120)).toEqual([3]);
    expect(await read('gl_admission_trends_hour', T0 - (T0 % 3_600))).toEqual([12]);
    const hours = await shedTrend(spec.db, { tenantId: 'rolling', dimension: 'INGEST', from: at(T0 - 3_600), to: at(T0 + 3_600), bucket: 'HOUR' });
    expect(hours.reduce((sum, point) => sum + point.admitted, 0)).toBe(15);
  });

  it('holds a minute back one roll-up more while the newest is under half a minute old by the clock', async () => {
    const rows = new RollupRows(ADMISSION_TRENDS);
    for (const minute of [T0, T0 + 60, T0 + 120]) rows.addValues(['live', 'INGEST', 'LIVE'], minute, ADMISSION_TRENDS.counts.map(() => 1));
    await spec.db.transaction((tx) => rows.upsert(tx));
    const rolledThrough = async () => Number((await spec.db.query<{ through: string }>('SELECT rolled_through::text AS through FROM gl_admission_trends_rolled')).rows[0]!.through);
    // 10 s into the newest minute (T0 + 120), while the pages write every tenant's new row: T0 waits (a minute a
    // minute past the newest is rolled up otherwise).
    await rollUpMinutes(spec.db, ADMISSION_TRENDS, { nowSeconds: T0 + 130 });
    expect(await rolledThrough()).toBe(T0);
    // 31 s in: T0 is rolled up, T0 + 60 not yet.
    await rollUpMinutes(spec.db, ADMISSION_TRENDS, { nowSeconds: T0 + 151 });
    expect(await rolledThrough()).toBe(T0 + 60);
    // Catching up (the newest minute long past by the clock), nothing waits.
    await rollUpMinutes(spec.db, ADMISSION_TRENDS, { nowSeconds: T0 + 600 });
    expect(await rolledThrough()).toBe(T0 + 60);
  });

  it('splits a merged summary that crosses minute, hour and day boundaries by its seconds in each', async () => {
    // 240 s from 23:58:30: 30 s, 60 s, 60 s, 60 s, 30 s across five minutes; 480 units at 2 per second.
    await record([admission({ fromSecond: T0 + 30, seconds: 240, admittedUnits: 480, shedUnits: 240, hitSeconds: 120 })]);
    const minutes = await shedTrend(spec.db, { tenantId: 'acme', dimension: 'INGEST', from: at(T0), to: at(T0 + 600), bucket: 'MINUTE' });
    expect(minutes.map((point) => [point.start.getTime() / 1000 - T0, point.admitted, point.shed, point.hits])).toEqual([
      [0, 60, 30, 15],
      [60, 120, 60, 30],
      [120, 120, 60, 30],
      [180, 120, 60, 30],
      [240, 60, 30, 15],
    ]);
    const days = await shedTrend(spec.db, { tenantId: 'acme', dimension: 'INGEST', from: at(T0 - 86_400), to: at(T0 + 86_400), bucket: 'DAY' });
    expect(days.map((point) => point.admitted)).toEqual([180, 300]);
  });

  it('ranks the tenants that shed and were refused the most, over any range, optionally for one dimension', async () => {
    await record([
      admission({ tenantId: 'a', shedUnits: 10, hitSeconds: 1 }),
      admission({ tenantId: 'b', shedUnits: 30, rejectedUnits: 5, hitSeconds: 1 }),
      admission({ tenantId: 'c', dimension: 'AI_INFERENCE', allowance: null, rejectedUnits: 20, hitSeconds: 1 }),
      admission({ tenantId: 'quiet', admittedUnits: 1000 }),
      // Three days earlier: inside a long range only.
      admission({ tenantId: 'a', fromSecond: T0 - 3 * 86_400, shedUnits: 100 }),
    ]);
    const day = { from: at(T0 - 3600), to: at(T0 + 3600) };
    expect(await topShedders(spec.db, { ...day, first: 10 })).toMatchObject([
      { tenantId: 'b', shed: 30, rejected: 5, hits: 1 },
      { tenantId: 'c', shed: 0, rejected: 20, hits: 1 },
      { tenantId: 'a', shed: 10, rejected: 0, hits: 1 },
    ]);
    expect(await topShedders(spec.db, { ...day, dimension: 'AI_INFERENCE', first: 10 })).toMatchObject([{ tenantId: 'c', shed: 0, rejected: 20, hits: 1 }]);
    expect(await topShedders(spec.db, { ...day, first: 1 })).toMatchObject([{ tenantId: 'b', shed: 30, rejected: 5, hits: 1 }]);
    // A week-long range answers from days, hours and minutes and still finds every unit.
    const week = await topShedders(spec.db, { from: at(T0 - 7 * 86_400 + 17), to: at(T0 + 600), first: 10 });
    expect(week[0]).toMatchObject({ tenantId: 'a', shed: 110, rejected: 0, hits: 1 });
  });

  it('counts refusals as refused messages (limited) with their units apart, and ranks by them unless asked for units', async () => {
    await record([
      // acme: 2,000 requests refused on the per-message charge, before decoding: no units.
      admission({ tenantId: 'acme', allowance: 'HTTP', rejectedMessages: 2_000, hitSeconds: 1 }),
      // globex: 67 requests of 10 readings each refused on their readings.
      admission({ tenantId: 'globex', allowance: 'HTTP', rejectedUnits: 670, rejectedMessages: 67, hitSeconds: 1 }),
    ]);
    const day = { from: at(T0 - 3600), to: at(T0 + 3600) };
    const [point] = await shedTrend(spec.db, { tenantId: 'acme', dimension: 'INGEST', ...day, bucket: 'HOUR' });
    expect(point).toMatchObject({ limited: 2_000, limitedMessages: 2_000, limitedUnits: 0, rejectedMessages: 2_000, rejected: 0 });
    expect(await topShedders(spec.db, { ...day, first: 10 })).toMatchObject([
      { tenantId: 'acme', limited: 2_000, limitedUnits: 0 },
      { tenantId: 'globex', limited: 67, limitedUnits: 670 },
    ]);
    expect((await topShedders(spec.db, { ...day, first: 10, orderBy: 'UNITS' })).map((shedder) => shedder.tenantId)).toEqual(['globex', 'acme']);
    await expect(topShedders(spec.db, { ...day, first: 10, orderBy: 'BYTES' as never })).rejects.toMatchObject({ field: 'orderBy' });
  });

  it('counts unresolved admissions by dimension and cause', async () => {
    await record(
      [],
      [
        unresolved({ units: 5, messages: 1 }),
        unresolved({ tenantId: 'b', units: 7, messages: 2 }),
        unresolved({ cause: 'pending', units: 3, messages: 3 }),
        unresolved({ dimension: 'EGRESS', cause: 'unknown-tenant', units: 1, messages: 1 }),
        unresolved({ fromSecond: T0 - 86_400, units: 1000, messages: 1 }),
      ],
    );
    expect(await unresolvedAdmissions(spec.db, { from: at(T0 - 3600), to: at(T0 + 3600) })).toEqual([
      { dimension: 'EGRESS', cause: 'unknown-tenant', count: 1, messages: 1 },
      { dimension: 'INGEST', cause: 'pending', count: 3, messages: 3 },
      { dimension: 'INGEST', cause: 'unreachable', count: 12, messages: 3 },
    ]);
  });

  it('refuses a malformed query with the field at fault', async () => {
    const base = { tenantId: 'acme', dimension: 'INGEST' as const, from: at(T0), to: at(T0 + 60), bucket: 'MINUTE' as const };
    await expect(shedTrend(spec.db, { ...base, to: at(T0 - 1) })).rejects.toMatchObject({ name: 'InvalidTrendQuery', field: 'to' });
    await expect(shedTrend(spec.db, { ...base, from: new Date('nope') })).rejects.toBeInstanceOf(InvalidTrendQuery);
    await expect(shedTrend(spec.db, { ...base, bucket: 'WEEK' as never })).rejects.toMatchObject({ field: 'bucket' });
    await expect(shedTrend(spec.db, { ...base, dimension: 'NOPE' as never })).rejects.toMatchObject({ field: 'dimension' });
    await expect(shedTrend(spec.db, { ...base, to: at(T0 + 365 * 86_400) })).rejects.toMatchObject({ field: 'bucket' });
    await expect(topShedders(spec.db, { from: at(T0), to: at(T0 + 60), first: 0 })).rejects.toMatchObject({ field: 'first' });
  });

  it('writes the same rows whether a page of summaries is merged at once or applied summary by summary', async () => {
    // Summaries that touch the same rows (tenants, allowances, minutes), some crossing minute and hour boundaries.
    const summaries = Array.from({ length: 12 }, (_, i) =>
      admission({
        tenantId: i % 3 === 0 ? 'acme' : 'b',
        allowance: i % 2 === 0 ? 'LIVE' : 'HTTP',
        fromSecond: T0 + 20 * i,
        seconds: i % 4 === 0 ? 75 : 1,
        admittedUnits: 3 * i + 1,
        shedUnits: i % 4,
        hitSeconds: i % 3,
      }),
    );
    const dump = async () => {
      const rows: unknown[] = [];
      for (const table of ['gl_admission_trends_minute', 'gl_admission_trends_hour', 'gl_admission_trends_day']) {
        rows.push(table, ...(await spec.rows(`SELECT * FROM ${table} WHERE bucket_start >= to_timestamp($1) ORDER BY 1, 2, 3, 4`, [T0 - 86_400])));
      }
      return rows;
    };
    await spec.givenOneByOne(...summaries.map((entry) => ({ type: 'AdmissionsRecorded', data: { entries: [entry] } })));
    const oneByOne = await dump();
    expect(oneByOne.length).toBeGreaterThan(3 + 2 * 3);
    await spec.reset();
    await spec.given(...summaries.map((entry) => ({ type: 'AdmissionsRecorded', data: { entries: [entry] } })));
    expect(await dump()).toEqual(oneByOne);
  });
});
