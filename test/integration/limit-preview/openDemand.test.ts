// The demand read model's open minutes (src/limit-preview/openDemand.ts): a page's seconds of the minutes still
// open are packed per (minute, dimension, shard), older ones go to the tenants' rows; the page that finds a
// minute past closes it, its records appended to the tenants' rows once, in the order they were written. A
// reader sees the same demand before the close, after it, and for one tenant (its shard alone).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DemandMinutes, pushSecond } from '../../../src/limit-preview/demandSeconds.ts';
import { forEachOpenRecord, OPEN_SHARDS, OpenDemandRowCutShort, openFrom, packOpenRecords, writeDemand } from '../../../src/limit-preview/openDemand.ts';
import { readRecordedDemand, type RecordedDemand } from '../../../src/limit-preview/readDemand.ts';
import { shardOf } from '../../../src/metrics/index.ts';
import { storageTargets, type TestDb } from '../../support/databases.ts';

const MINUTE = 1_800_000_000 - (1_800_000_000 % 60);
/** The open row the records below stand for, as the projection would name it in an error. */
const ROW = { minuteStart: MINUTE, dimension: 'INGEST' };
/** Tenants enough to fill every shard, one with a name of several UTF-8 bytes a character. */
const TENANTS = [...Array.from({ length: 40 }, (_, i) => `tenant-${i}`), 'ténant-ü-東京'];

/** One second of every tenant at `second`, `units` each (messages 1; the last tenant refused one unit). */
function secondOf(second: number, units: number): DemandMinutes {
  const minutes = new DemandMinutes();
  for (const tenantId of TENANTS) {
    minutes.addSpan('INGEST', tenantId, '', second, 1, { units, messages: 1, refusedUnits: tenantId === TENANTS[40] ? 1 : 0, refusedMessages: 0 });
  }
  return minutes;
}

/** The demand read back as plain numbers: per tenant, its seconds and units. */
function flat(demand: RecordedDemand): Record<string, [number, number][]> {
  const out: Record<string, [number, number][]> = {};
  for (const [tenantId, byAllowance] of demand) {
    const series = byAllowance.get('')!;
    out[tenantId] = Array.from(series.seconds, (second, i) => [second, series.units[i]!]);
  }
  return out;
}

describe('open demand records', () => {
  it('read back as packed, keys of any UTF-8, and a row cut short is told', () => {
    const minutes = secondOf(MINUTE + 3, 7);
    const packed = packOpenRecords([...minutes.values()]);
    const seen: string[] = [];
    forEachOpenRecord(packed, ROW, (tenantId, allowance, records, start, end) => seen.push(`${tenantId}/${allowance}/${Buffer.from(records.subarray(start, end)).toString('hex')}`));
    const expected = [...minutes.values()].map((minute) => `${minute.tenantId}/${minute.allowance}/${Buffer.from(minute.bytes).toString('hex')}`);
    expect(seen).toEqual(expected);
    const visited: string[] = [];
    expect(() => forEachOpenRecord(packed.subarray(0, packed.length - 1), ROW, (tenantId) => visited.push(tenantId))).toThrow(new OpenDemandRowCutShort(MINUTE, 'INGEST'));
    expect(visited).toEqual(seen.slice(0, -1).map((each) => each.split('/')[0]));
    const bytes: number[] = [];
    pushSecond(bytes, 3, 7, 1, 0, 0);
    expect(Buffer.from(bytes).toString('hex')).toBe(expected[0]!.split('/')[2]);
  });

  it('keeps the minute of the newest event and the one before open', () => {
    expect(openFrom(new Date((MINUTE + 125) * 1000))).toBe(MINUTE + 60);
    expect(openFrom(new Date((MINUTE + 120) * 1000))).toBe(MINUTE + 60);
    expect(openFrom(new Date((MINUTE + 119) * 1000))).toBe(MINUTE);
  });
});

describe.each(storageTargets)('open demand minutes on $name', (target) => {
  let testDb: TestDb;
  beforeAll(async () => {
    testDb = await target.open();
  });
  afterAll(async () => testDb.dispose());

  const query = (tenantIds: string[] | null) => ({ dimension: 'INGEST' as const, tenantIds, from: new Date(MINUTE * 1000), to: new Date((MINUTE + 180) * 1000) });
  const counts = async () => {
    const { rows } = await testDb.db.query<{ open: number; rows: number }>(
      'SELECT (SELECT count(*)::int FROM gl_demand_open) AS open, (SELECT count(*)::int FROM gl_demand_seconds) AS rows',
    );
    return rows[0]!;
  };

  it('packs open minutes per shard, closes them once, and reads the same throughout', async () => {
    // Pages while MINUTE is open: seconds 0 and 1 of it, one row per shard holding tenants.
    const shards = new Set(TENANTS.map((tenantId) => shardOf(tenantId, OPEN_SHARDS))).size;
    await testDb.db.transaction((tx) => writeDemand(tx, secondOf(MINUTE, 2), MINUTE));
    await testDb.db.transaction((tx) => writeDemand(tx, secondOf(MINUTE + 1, 3), MINUTE));
    expect(await counts()).toEqual({ open: 2 * shards, rows: 0 });
    const open = flat(await readRecordedDemand(testDb.db, query(null)));
    expect(Object.keys(open)).toHaveLength(TENANTS.length);
    expect(open['tenant-7']).toEqual([
      [MINUTE, 2],
      [MINUTE + 1, 3],
    ]);
    expect(flat(await readRecordedDemand(testDb.db, query([TENANTS[40]!])))).toEqual({ [TENANTS[40]!]: open[TENANTS[40]!] });

    // A page two minutes on: MINUTE closes (its packed rows become one row per tenant, seconds in the order
    // written), a late second of it goes to the rows, and the page's own minute is packed.
    const page = secondOf(MINUTE + 2, 5);
    for (const minute of secondOf(MINUTE + 120, 11).values()) page.appendRecords(minute.dimension, minute.tenantId, minute.allowance, minute.minuteStart, minute.bytes);
    await testDb.db.transaction((tx) => writeDemand(tx, page, MINUTE + 60));
    expect(await counts()).toEqual({ open: shards, rows: TENANTS.length });
    const { rows } = await testDb.db.query<{ seconds: Uint8Array }>("SELECT seconds FROM gl_demand_seconds WHERE tenant_id = 'tenant-7'");
    const written: number[] = [];
    for (const [second, units] of [
      [0, 2],
      [1, 3],
      [2, 5],
    ] as const) {
      pushSecond(written, second, units, 1, 0, 0);
    }
    expect(Buffer.from(rows[0]!.seconds).toString('hex')).toBe(Buffer.from(written).toString('hex'));
    const closed = flat(await readRecordedDemand(testDb.db, query(null)));
    expect(closed['tenant-7']).toEqual([
      [MINUTE, 2],
      [MINUTE + 1, 3],
      [MINUTE + 2, 5],
      [MINUTE + 120, 11],
    ]);
    expect(flat(await readRecordedDemand(testDb.db, query(['tenant-7', TENANTS[40]!])))).toEqual({ 'tenant-7': closed['tenant-7'], [TENANTS[40]!]: closed[TENANTS[40]!] });

    // An open row whose bytes were cut (no code of ours writes one): a preview and the next page both stop at it
    // with the same error rather than count the minute short; the page writes nothing.
    await testDb.db.query('UPDATE gl_demand_open SET records = substring(records FROM 1 FOR length(records) - 1) WHERE id = (SELECT min(id) FROM gl_demand_open)');
    const cutShort = new OpenDemandRowCutShort(MINUTE + 120, 'INGEST');
    await expect(readRecordedDemand(testDb.db, query(null))).rejects.toThrow(cutShort);
    const before = await counts();
    await expect(testDb.db.transaction((tx) => writeDemand(tx, secondOf(MINUTE + 240, 1), MINUTE + 180))).rejects.toThrow(cutShort);
    expect(await counts()).toEqual(before);
  });
});
