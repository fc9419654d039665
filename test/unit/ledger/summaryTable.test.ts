// Admission summaries are written as a table (field names once, a row of values per entry) and read back
// whole, and events written before that shape read the same.
import { describe, expect, it } from 'vitest';
import { ADMISSION_FIELDS, entriesOf, summaryTable, UNRESOLVED_FIELDS } from '../../../src/ledger/catalog/admissions.ts';
import type { AdmissionSummary, UnresolvedAdmissionSummary } from '../../../src/governance/index.ts';

const admission: AdmissionSummary = {
  tenantId: 'acme',
  dimension: 'INGEST',
  allowance: 'LIVE',
  fromSecond: 1_790_000_000,
  seconds: 2,
  admittedUnits: 5,
  admittedMessages: 2,
  shedUnits: 3,
  shedMessages: 1,
  rejectedUnits: 0,
  rejectedMessages: 0,
  unauthenticatedUnits: 4,
  unauthenticatedMessages: 1,
  hitSeconds: 1,
};

describe('summary tables', () => {
  it('read back every field of every entry', () => {
    const unresolved: UnresolvedAdmissionSummary = { tenantId: 'acme', dimension: 'EGRESS', cause: 'pending', fromSecond: 7, seconds: 1, units: 9, messages: 3 };
    const table = summaryTable(ADMISSION_FIELDS, [admission, { ...admission, tenantId: 'other', allowance: null }]);
    expect(table.rows[0]).toEqual(['acme', 'INGEST', 'LIVE', 1_790_000_000, 2, 5, 2, 3, 1, 0, 0, 4, 1, 1]);
    // Through JSON, as the ledger stores it.
    expect(entriesOf(JSON.parse(JSON.stringify(table)))).toEqual([admission, { ...admission, tenantId: 'other', allowance: null }]);
    expect(entriesOf(JSON.parse(JSON.stringify(summaryTable(UNRESOLVED_FIELDS, [unresolved]))))).toEqual([unresolved]);
  });

  it('write an optional count the entry lacks as 0, as readers take its absence', () => {
    const { unauthenticatedUnits: _units, unauthenticatedMessages: _messages, ...older } = admission;
    expect(entriesOf(summaryTable<AdmissionSummary>(ADMISSION_FIELDS, [older]))).toEqual([{ ...older, unauthenticatedUnits: 0, unauthenticatedMessages: 0 }]);
  });

  it('read events written as a list of entries, and nothing from data of neither shape', () => {
    expect(entriesOf({ entries: [admission] })).toEqual([admission]);
    expect(entriesOf({} as never)).toEqual([]);
    expect(entriesOf(null as never)).toEqual([]);
  });

  it('read fields by name, whatever their order', () => {
    expect(entriesOf({ fields: ['seconds', 'tenantId'], rows: [[1, 'acme']] } as never)).toEqual([{ seconds: 1, tenantId: 'acme' }]);
  });
});
