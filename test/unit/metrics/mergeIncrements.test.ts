import { describe, expect, it } from 'vitest';
import { ADMISSION_TRENDS } from '../../../src/metrics/trends/rollupFamily.ts';
import { mergeIncrements, RollupRows } from '../../../src/metrics/trends/upsertRollups.ts';

const keys = (tenant_id: string, allowance = 'LIVE') => ({ tenant_id, dimension: 'INGEST', allowance });

describe('mergeIncrements', () => {
  it('sums increments of the same keys and minute, keeps others apart, in first-seen order', () => {
    const merged = mergeIncrements(ADMISSION_TRENDS, [
      { keys: keys('a'), minuteStart: 60, counts: { admitted_units: 2, hits: 1 } },
      { keys: keys('b'), minuteStart: 60, counts: { admitted_units: 5 } },
      { keys: keys('a'), minuteStart: 120, counts: { admitted_units: 7 } },
      { keys: keys('a'), minuteStart: 60, counts: { admitted_units: 3, shed_units: 4 } },
      { keys: keys('a', 'HTTP'), minuteStart: 60, counts: { admitted_units: 1 } },
    ]);
    // Rows: tenant_id, dimension, allowance, minute start, then the family's counts in order.
    expect(merged).toEqual([
      ['a', 'INGEST', 'LIVE', 60, 5, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0],
      ['b', 'INGEST', 'LIVE', 60, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      ['a', 'INGEST', 'LIVE', 120, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
      ['a', 'INGEST', 'HTTP', 60, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    ]);
  });

  it('merges a tenant with more rows than it looks through one by one (the rest found by their whole id) as any other', () => {
    // 40 minutes of one tenant, each added three times, interleaved with another tenant: 40 rows of 3 each.
    const increments = [];
    for (let round = 0; round < 3; round++) {
      for (let minute = 0; minute < 40; minute++) {
        increments.push({ keys: keys('busy'), minuteStart: minute * 60, counts: { admitted_units: 1 } });
        increments.push({ keys: keys('quiet'), minuteStart: 0, counts: { shed_units: 1 } });
      }
    }
    const merged = mergeIncrements(ADMISSION_TRENDS, increments);
    expect(merged).toHaveLength(41);
    expect(merged.filter((row) => row[0] === 'busy').map((row) => [row[3], row[4]])).toEqual(Array.from({ length: 40 }, (_, minute) => [minute * 60, 3]));
    expect(merged.find((row) => row[0] === 'quiet')?.[6]).toBe(120);
  });

  it('does not take keys that differ only in where a value ends for the same key', () => {
    const merged = mergeIncrements(ADMISSION_TRENDS, [
      { keys: { tenant_id: 'ab', dimension: 'c', allowance: '' }, minuteStart: 0, counts: { hits: 1 } },
      { keys: { tenant_id: 'a', dimension: 'bc', allowance: '' }, minuteStart: 0, counts: { hits: 1 } },
    ]);
    expect(merged).toHaveLength(2);
  });

  it('absorbs another\'s rows, merging those of the same keys and minute, including past the rows it looks through one by one', () => {
    const counts = (units: number) => ADMISSION_TRENDS.counts.map((count) => (count === 'admitted_units' ? units : 0));
    const rows = new RollupRows(ADMISSION_TRENDS);
    const other = new RollupRows(ADMISSION_TRENDS);
    for (let tenant = 0; tenant < 30; tenant++) rows.addValues([`t${tenant}`, 'INGEST', 'LIVE'], 60, counts(1));
    for (let minute = 0; minute < 40; minute++) rows.addValues(['busy', 'INGEST', 'LIVE'], minute * 60, counts(1));
    for (let tenant = 20; tenant < 40; tenant++) other.addValues([`t${tenant}`, 'INGEST', 'LIVE'], 60, counts(2));
    for (let minute = 30; minute < 50; minute++) other.addValues(['busy', 'INGEST', 'LIVE'], minute * 60, counts(2));
    rows.absorb(other);
    expect(rows.size).toBe(40 + 50);
    const find = (tenant: string, minute: number) => rows.rows().filter((row) => row[0] === tenant && row[3] === minute).map((row) => row[4]);
    expect([find('t0', 60), find('t25', 60), find('t35', 60)]).toEqual([[1], [3], [2]]);
    expect([find('busy', 0), find('busy', 35 * 60), find('busy', 45 * 60)]).toEqual([[1], [3], [2]]);
    // The absorbed rows are unchanged.
    expect(other.rows().find((row) => row[0] === 't25')?.[4]).toBe(2);
  });
});
