// The admission trends' open minutes (src/metrics/trends/openMinutes.ts): the newest two minutes held by the
// projection and written packed each page, a minute written to the minute table once when it closes; every read
// adds them (bucketRows), and the memory and the packed rows never disagree, whoever wrote last.
import { expect, it } from 'vitest';
import { admissionTrendsProjection } from '../../../projections/admissionTrends.ts';
import { ADMISSION_TRENDS, bucketRows, familyTables, OpenMinutes, rollUpMinutes, shardOf, shardSql, shedTrend, topShedders } from '../../../src/metrics/index.ts';
import type { AdmissionSummary } from '../../../src/governance/index.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { useProjectionSpec } from '../../support/projectionSpec.ts';

// Each test in a window of its own, a day apart, at a minute boundary (the clock is far ahead of them all).
const EPOCH = Date.UTC(2026, 2, 1, 12, 0, 0) / 1000;
let windowIndex = 0;
const at = (second: number) => new Date(second * 1000);
const counts = (units: number) => ADMISSION_TRENDS.counts.map((count) => (count === 'admitted_units' ? units : 0));

describeOnEachStorage('open minutes of the admission trends on $name', (target) => {
  const spec = useProjectionSpec(target, admissionTrendsProjection);
  const window = () => EPOCH + 86_400 * windowIndex++;
  const record = (...entries: (Partial<AdmissionSummary> & { fromSecond: number })[]) =>
    spec.given({ type: 'AdmissionsRecorded', data: { entries: entries.map((entry) => admissionSummary(entry)) } });
  const tableMinutes = async (tenant: string) =>
    (
      await spec.rows<{ start: string; units: string }>(
        `SELECT extract(epoch FROM bucket_start)::bigint::text AS start, admitted_units::text AS units FROM gl_admission_trends_minute WHERE tenant_id = $1 ORDER BY 1`,
        [tenant],
      )
    ).map((row) => [Number(row.start), Number(row.units)]);
  const packedMinutes = async () =>
    (await spec.rows<{ start: string }>('SELECT DISTINCT minute_start::text AS start FROM gl_admission_trends_open ORDER BY 1')).map((row) => Number(row.start));
  const trend = async (tenantId: string, from: number, to: number, bucket: 'MINUTE' | 'HOUR' | 'DAY') =>
    (await shedTrend(spec.db, { tenantId, dimension: 'INGEST', from: at(from), to: at(to), bucket })).map((point) => [point.start.getTime() / 1000, point.admitted]);

  it('computes a tenant\'s shard the same way in SQL as in the projection', async () => {
    const tenants = ['acme', 'tenant-000123', 'ünïcødé-テナント', 'a'.repeat(200), '', 'x"y\\z{,}'];
    for (const tenant of tenants) {
      const { rows } = await spec.db.query<{ shard: number }>(`SELECT ${shardSql('$1', 64)} AS shard`, [tenant]);
      expect(Number(rows[0]!.shard), tenant).toBe(shardOf(tenant, 64));
    }
    // Spread over the shards, not all in a few.
    const used = new Set(Array.from({ length: 1_000 }, (_, index) => shardOf(`tenant-${index}`, 64)));
    expect(used.size).toBe(64);
  });

  it('holds the newest minute and the one before packed, and writes a minute to the minute table once it closes', async () => {
    const t0 = window();
    await record({ tenantId: 'live', fromSecond: t0 + 5, admittedUnits: 1 }, { tenantId: 'live', fromSecond: t0 + 65, admittedUnits: 2 });
    // Both minutes open: nothing in the minute table, every read sees them.
    expect(await tableMinutes('live')).toEqual([]);
    expect(await packedMinutes()).toContain(t0);
    expect(await trend('live', t0, t0 + 180, 'MINUTE')).toEqual([
      [t0, 1],
      [t0 + 60, 2],
    ]);
    expect(await trend('live', t0 - 3_600, t0 + 3_600, 'HOUR')).toEqual([[t0, 3]]);
    expect(await trend('live', t0 - 86_400, t0 + 86_400, 'DAY')).toEqual([[t0 - (t0 % 86_400), 3]]);
    const top = await topShedders(spec.db, { from: at(t0), to: at(t0 + 180), first: 5, orderBy: 'UNITS' });
    expect(top.find((row) => row.tenantId === 'live')).toBeUndefined(); // admitted only: nothing shed
    // More of the open minutes, in another page: added to what is held.
    await record({ tenantId: 'live', fromSecond: t0 + 50, admittedUnits: 10 }, { tenantId: 'live', fromSecond: t0 + 70, shedUnits: 4, admittedUnits: 20 });
    expect(await trend('live', t0, t0 + 180, 'MINUTE')).toEqual([
      [t0, 11],
      [t0 + 60, 22],
    ]);
    expect((await topShedders(spec.db, { from: at(t0), to: at(t0 + 180), first: 5, orderBy: 'UNITS' })).map((row) => [row.tenantId, row.shed])).toEqual([['live', 4]]);
    // The minute after next: t0's minute closes into the minute table, and only there.
    await record({ tenantId: 'live', fromSecond: t0 + 125, admittedUnits: 100 });
    expect(await tableMinutes('live')).toEqual([[t0, 11]]);
    expect(await packedMinutes()).not.toContain(t0);
    expect(await trend('live', t0, t0 + 180, 'MINUTE')).toEqual([
      [t0, 11],
      [t0 + 60, 22],
      [t0 + 120, 100],
    ]);
    // A late summary of the closed minute goes to the minute table; the hour stays whole after a roll-up.
    await record({ tenantId: 'live', fromSecond: t0 + 6, admittedUnits: 1_000 });
    expect(await tableMinutes('live')).toEqual([[t0, 1_011]]);
    await rollUpMinutes(spec.db, ADMISSION_TRENDS);
    expect(await trend('live', t0 - 3_600, t0 + 3_600, 'HOUR')).toEqual([[t0, 1_133]]);
    const rolled = await spec.rows<{ through: string }>('SELECT rolled_through::text AS through FROM gl_admission_trends_rolled');
    // Never past an open minute: t0 + 60 is still open.
    expect(Number(rolled[0]!.through)).toBeLessThanOrEqual(t0 + 60);
  });

  it('reads one tenant\'s shard only, and answers the same as reading them all', async () => {
    const t0 = window();
    const tenants = Array.from({ length: 200 }, (_, index) => `shard-${index}`);
    await record(...tenants.map((tenantId, index) => ({ tenantId, fromSecond: t0 + 1, admittedUnits: index + 1 })));
    for (const tenantId of ['shard-0', 'shard-77', 'shard-199']) {
      const pruned = await trend(tenantId, t0, t0 + 60, 'MINUTE');
      const { rows } = await spec.db.query<{ units: string }>(
        `SELECT sum(admitted_units)::text AS units FROM ${bucketRows(ADMISSION_TRENDS, 'MINUTE')} AS rows WHERE tenant_id = $1 AND bucket_start = to_timestamp($2)`,
        [tenantId, t0],
      );
      expect(pruned).toEqual([[t0, Number(rows[0]!.units)]]);
    }
  });

  it('keeps keys with quotes, backslashes, braces, commas and other scripts whole, written and read back', async () => {
    const t0 = window();
    const odd = ['x"y\\z{,}', 'NULL', ' spaced ', 'ünïcødé-テナント', '\\"', '{}'];
    const one = new OpenMinutes(ADMISSION_TRENDS);
    for (const [index, tenant] of odd.entries()) {
      await spec.db.transaction(async (tx) => {
        await one.begin(tx);
        one.add([tenant, 'INGEST', `a,"${index}"`], t0, counts(index + 1), t0);
        await one.write(tx);
      });
    }
    // Another instance reads them back (as after a restart) and adds to the same rows.
    const other = new OpenMinutes(ADMISSION_TRENDS);
    await spec.db.transaction(async (tx) => {
      await other.begin(tx);
      for (const [index, tenant] of odd.entries()) other.add([tenant, 'INGEST', `a,"${index}"`], t0, counts(10), t0);
      await other.write(tx);
    });
    const { rows } = await spec.db.query<{ tenant_id: string; allowance: string; units: string }>(
      `SELECT tenant_id, allowance, sum(admitted_units)::text AS units FROM ${bucketRows(ADMISSION_TRENDS, 'MINUTE')} AS rows
        WHERE bucket_start = to_timestamp($1) GROUP BY 1, 2`,
      [t0],
    );
    expect(new Map(rows.map((row) => [row.tenant_id, [row.allowance, Number(row.units)]]))).toEqual(new Map(odd.map((tenant, index) => [tenant, [`a,"${index}"`, index + 11]])));
  });

  it('keeps to a minute far ahead of the clock in the minute table, and does not close the open ones for it', async () => {
    const t0 = window();
    const ahead = Math.floor(Date.now() / 1000 / 60) * 60 + 3_600;
    await record({ tenantId: 'ahead', fromSecond: t0 + 1, admittedUnits: 1 }, { tenantId: 'ahead', fromSecond: ahead, admittedUnits: 2 });
    expect(await tableMinutes('ahead')).toEqual([[ahead, 2]]);
    expect(await packedMinutes()).toContain(t0);
  });

  it('reads the packed rows again after a page of its own that rolled back, another runner\'s page, or a rebuild', async () => {
    const t0 = window();
    const one = new OpenMinutes(ADMISSION_TRENDS);
    const other = new OpenMinutes(ADMISSION_TRENDS);
    const page = (open: OpenMinutes, units: number, fail = false) =>
      spec.db
        .transaction(async (tx) => {
          await open.begin(tx);
          expect(open.add(['race', 'INGEST', 'LIVE'], t0 + 60_000, counts(units), t0 + 60_000)).toBe(true);
          await open.write(tx);
          if (fail) throw new Error('rolled back');
        })
        .catch((error: Error) => expect(error.message).toBe('rolled back'));
    const stored = async () =>
      (await spec.rows<{ units: string }>(`SELECT sum(admitted_units)::text AS units FROM ${bucketRows(ADMISSION_TRENDS, 'MINUTE')} AS rows WHERE tenant_id = 'race'`))[0]!.units;
    await page(one, 1);
    await page(one, 10, true);
    await page(one, 100);
    expect(await stored()).toBe('101');
    await page(other, 1_000);
    await page(one, 10_000);
    await page(other, 100_000);
    expect(await stored()).toBe('111101');
    // A rebuild empties the family's tables, the packed rows and their mark with them.
    expect(familyTables(ADMISSION_TRENDS)).toEqual(expect.arrayContaining(['gl_admission_trends_open', 'gl_admission_trends_open_mark']));
    await spec.db.exec(familyTables(ADMISSION_TRENDS).map((table) => `DELETE FROM ${table};`).join('\n'));
    await page(one, 7);
    expect(await stored()).toBe('7');
  });

  it('closes a minute a few shards a page, reads it whole meanwhile, and rolls it up only once it is all closed', async () => {
    const t0 = window();
    await spec.db.exec(familyTables(ADMISSION_TRENDS).map((table) => `DELETE FROM ${table};`).join('\n'));
    const open = new OpenMinutes(ADMISSION_TRENDS, { closeRowsPerPage: 40 });
    const page = (add: (open: OpenMinutes) => void) =>
      spec.db.transaction(async (tx) => {
        await open.begin(tx);
        add(open);
        open.closeDue();
        for (const rows of open.takeClosed()) await rows.upsert(tx);
        await open.write(tx);
      });
    const tenants = Array.from({ length: 300 }, (_, index) => `closing-${index}`);
    await page((open) => tenants.forEach((tenant) => open.add([tenant, 'INGEST', 'LIVE'], t0, counts(1), t0)));
    const total = async () =>
      Number(
        (
          await spec.rows<{ units: string }>(
            `SELECT sum(admitted_units)::text AS units FROM ${bucketRows(ADMISSION_TRENDS, 'HOUR')} AS rows WHERE tenant_id LIKE 'closing-%'`,
          )
        )[0]!.units,
      );
    const packedShards = async () => Number((await spec.rows<{ n: string }>('SELECT count(*)::text AS n FROM gl_admission_trends_open WHERE minute_start = $1', [t0]))[0]!.n);
    const inTable = async () => Number((await spec.rows<{ n: string }>("SELECT count(*)::text AS n FROM gl_admission_trends_minute WHERE tenant_id LIKE 'closing-%'"))[0]!.n);
    expect(await packedShards()).toBe(new Set(tenants.map((tenant) => shardOf(tenant, 64))).size);
    // The minute after next begins: t0's minute closes at least 40 rows (whole shards) a page.
    let pages = 0;
    const seen: number[] = [];
    await page((open) => open.add(['closing-0', 'INGEST', 'LIVE'], t0 + 120, counts(0), t0 + 120));
    for (;;) {
      pages++;
      const rows = await inTable();
      seen.push(rows);
      expect(await total()).toBe(300);
      if ((await packedShards()) > 0) {
        expect(rows).toBeLessThan(300);
        // A roll-up never reaches a minute that still has packed rows.
        await rollUpMinutes(spec.db, ADMISSION_TRENDS, { nowSeconds: t0 + 180 });
        const rolled = await spec.rows<{ through: string }>('SELECT rolled_through::text AS through FROM gl_admission_trends_rolled');
        expect(Number(rolled[0]?.through ?? 0)).toBeLessThanOrEqual(t0);
        await page(() => {});
      } else break;
    }
    expect(seen[seen.length - 1]).toBe(300);
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(300 / (40 + 20)));
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    // Each page closed whole shards until it reached 40 rows (or ran out): at least 40, and past 40 by less than
    // the largest shard.
    const shardRows = new Map<number, number>();
    for (const tenant of tenants) shardRows.set(shardOf(tenant, 64), (shardRows.get(shardOf(tenant, 64)) ?? 0) + 1);
    const largest = Math.max(...shardRows.values());
    seen.forEach((rows, index) => {
      const closed = rows - (index === 0 ? 0 : seen[index - 1]!);
      expect(closed).toBeGreaterThanOrEqual(Math.min(40, 300 - (index === 0 ? 0 : seen[index - 1]!)));
      expect(closed).toBeLessThan(40 + largest);
    });
    await rollUpMinutes(spec.db, ADMISSION_TRENDS, { nowSeconds: t0 + 180 });
    expect(await total()).toBe(300);
  });

  it('closes the oldest open minutes early past the rows it may hold, the newest too, counting each once', async () => {
    const t0 = window();
    await spec.db.exec(familyTables(ADMISSION_TRENDS).map((table) => `DELETE FROM ${table};`).join('\n'));
    const open = new OpenMinutes(ADMISSION_TRENDS, { maxRows: 10 });
    const closedRows: number[] = [];
    await spec.db.transaction(async (tx) => {
      await open.begin(tx);
      for (let tenant = 0; tenant < 8; tenant++) open.add([`cap-${tenant}`, 'INGEST', 'LIVE'], t0, counts(1), t0);
      for (let tenant = 0; tenant < 8; tenant++) open.add([`cap-${tenant}`, 'INGEST', 'LIVE'], t0 + 60, counts(1), t0);
      // 16 rows: t0's minute closed (8), and the newest is held.
      expect(open.size).toBe(8);
      for (let tenant = 8; tenant < 12; tenant++) open.add([`cap-${tenant}`, 'INGEST', 'LIVE'], t0 + 60, counts(1), t0);
      // At 11 rows of the newest alone (cap-10) it closed too; cap-11 opened it again.
      expect(open.size).toBe(1);
      open.add(['cap-0', 'INGEST', 'LIVE'], t0 + 60, counts(5), t0);
      expect(open.size).toBe(2);
      for (const rows of open.takeClosed()) {
        closedRows.push(rows.size);
        await rows.upsert(tx);
      }
      await open.write(tx);
    });
    expect(closedRows.reduce((all, rows) => all + rows, 0)).toBe(8 + 11);
    const { rows } = await spec.db.query<{ start: string; units: string }>(
      `SELECT extract(epoch FROM bucket_start)::bigint::text AS start, sum(admitted_units)::text AS units FROM ${bucketRows(ADMISSION_TRENDS, 'MINUTE')} AS rows
        WHERE tenant_id LIKE 'cap-%' GROUP BY 1 ORDER BY 1`,
    );
    expect(rows.map((row) => [Number(row.start), Number(row.units)])).toEqual([
      [t0, 8],
      [t0 + 60, 12 + 5],
    ]);
    expect(await packedMinutes()).toEqual([t0 + 60]);
  });
});
