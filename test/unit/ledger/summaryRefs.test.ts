import { describe, expect, it } from 'vitest';
import { expandSummaryRefs, positionsCode, positionsCodeOf, runLengthCode, runLengthCodeOf, runLengthDecode, SummaryKeySources } from '../../../src/ledger/catalog/summaryRefs.ts';
import { orderByRow } from '../../../src/ledger/ledgerRecorder.ts';
import { ADMISSION_FIELDS } from '../../../src/ledger/catalog/admissions.ts';

const source = { fields: ADMISSION_FIELDS, rows: [['a', 'INGEST', 'LIVE', 1, 1, 3, 1, 10, 1, 0, 0, 0, 0, 1], ['b', 'API_REQUESTS', null, 1, 1, 3, 1, 10, 1, 0, 0, 0, 0, 1]] };

describe('summary references', () => {
  it('run-length codes integers both ways', () => {
    expect(runLengthCode([3, 3, 3, 5, 7, 7])).toBe('3*3,5,7*2');
    expect(runLengthDecode('3*3,5,7*2', 100)).toEqual([3, 3, 3, 5, 7, 7]);
    expect(positionsCode([0, 1, 2, 3, 7])).toBe('0,1*3,4');
    expect(runLengthDecode('', 10)).toEqual([]);
  });

  it('refuses what is no code, or a code of more values than allowed, without throwing', () => {
    for (const bad of ['x', '1*0', '1*-2', '1.5', '1*1e9', 7, null, '9007199254740993']) expect(runLengthDecode(bad, 1_000)).toBeNull();
    expect(runLengthDecode('0*1001', 1_000)).toBeNull();
  });

  it('expands a reference from its source, and names why one cannot be read', () => {
    const sources = new SummaryKeySources();
    sources.remember('s', source);
    const keys = sources.get('s')!;
    const table = expandSummaryRefs({ keysOf: 's', at: '1,-1', columns: { fromSecond: '9*2', admittedUnits: '4,5' } }, keys);
    expect(table).toMatchObject({ rows: [['b', 'API_REQUESTS', null, 9, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0], ['a', 'INGEST', 'LIVE', 9, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0]] });
    expect(expandSummaryRefs({ keysOf: 's', at: '0,5', columns: {} }, keys)).toMatch(/outside its source's 2 rows/);
    expect(expandSummaryRefs({ keysOf: 's', at: '0,1', columns: { shedUnits: '1' } }, keys)).toMatch(/column shedUnits/);
    expect(expandSummaryRefs({ keysOf: 's', at: 'zz', columns: {} }, keys)).toMatch(/not a run-length code/);
    expect(sources.knownTableOf({ keysOf: 'unknown', at: '0', columns: {} })).toMatch(/not read here/);
  });

  it('forgets the oldest sources past its bound of keys', () => {
    const sources = new SummaryKeySources(3);
    sources.remember('first', source);
    sources.remember('second', source);
    expect(sources.get('first')).toBeUndefined();
    expect(sources.get('second')).toBeDefined();
  });
});

describe('the Recorder writing references', () => {
  it('codes a column from values in place as runLengthCode codes their array', () => {
    for (const values of [[], [0], [3, 3, 3, 5, 7, 7], [1, 2, 3], [9, 9], [0, 1, 1, 0, 0, 0, 12]]) {
      expect(runLengthCodeOf(values.length, (i) => values[i]!)).toBe(runLengthCode(values));
      const sorted = [...values].sort((a, b) => a - b);
      expect(positionsCodeOf(sorted.length, (i) => sorted[i]!)).toBe(positionsCode(sorted));
    }
  });

  it('orders places by row as a stable sort does', () => {
    const random = (n: number, max: number) => Array.from({ length: n }, () => Math.floor(Math.random() * max));
    for (const rows of [[], [0], [0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 2, 1, 0, 2], random(5_000, 4_000), random(5_000, 10)]) {
      expect(orderByRow(rows)).toEqual(rows.map((_, index) => index).sort((a, b) => rows[a]! - rows[b]!));
    }
  });
});
