import { describe, expect, it } from 'vitest';
import { expandSummaryRefs, positionsCode, runLengthCode, runLengthDecode, SummaryKeySources } from '../../../src/ledger/catalog/summaryRefs.ts';
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
