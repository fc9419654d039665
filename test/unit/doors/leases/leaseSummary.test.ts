// A leasing client's summary is bounded before it is recorded: whatever a client sends, what readLeaseSummary
// lets through spans 1 to 60 s of one minute within the window of client times, and carries whole numbers
// within their maxima; anything else is refused with the field.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { LIMIT_MAX } from '../../../../src/governance/index.ts';
import { LEASE_SUMMARY_MAX_PER_SECOND, LEASE_SUMMARY_MAX_SECONDS, readLeaseSummary } from '../../../../src/doors/leases/leaseSummary.ts';
import { SEND_TIME_MAX_AGE_MS, SEND_TIME_MAX_AHEAD_MS } from '../../../../src/doors/pipeline/index.ts';

const NOW_MS = Date.parse('2026-12-03T02:00:30Z');
const NOW_SECOND = NOW_MS / 1000;
const good = {
  id: 'b9d5a3c4-6f10-4b8e-9a55-3d1c3a0e7f01',
  tenantId: 'acme',
  dimension: 'EGRESS',
  allowance: 'CONNECTORS',
  fromSecond: NOW_SECOND - 10,
  seconds: 1,
  admittedUnits: 7,
  admittedCount: 7,
  refusedUnits: 3,
  refusedCount: 3,
  hitSeconds: 1,
};

const fieldOf = (raw: unknown) => {
  const read = readLeaseSummary(raw, NOW_MS);
  return read.status === 'invalid' ? read.error.field : 'valid';
};

describe('lease summary bounds', () => {
  it('takes a summary within its bounds as the Recorder’s summary, refused units by the dimension’s behaviour', () => {
    const read = readLeaseSummary(good, NOW_MS);
    expect(read).toEqual({
      status: 'valid',
      id: good.id,
      summary: {
        id: good.id,
        tenantId: 'acme',
        dimension: 'EGRESS',
        allowance: 'CONNECTORS',
        fromSecond: NOW_SECOND - 10,
        seconds: 1,
        admittedUnits: 7,
        admittedMessages: 7,
        shedUnits: 3,
        shedMessages: 3,
        rejectedUnits: 0,
        rejectedMessages: 0,
        hitSeconds: 1,
      },
    });
    // Without an id (a client older than ids) it is still taken.
    const { id: _id, ...unnamed } = good;
    expect(readLeaseSummary(unnamed, NOW_MS)).toMatchObject({ status: 'valid', id: undefined });
  });

  it('refuses each field out of bounds with its name (issue 34 item 9)', () => {
    expect(fieldOf({ ...good, seconds: 1_000_000_000_000 })).toBe('seconds');
    expect(fieldOf({ ...good, seconds: 0 })).toBe('seconds');
    expect(fieldOf({ ...good, seconds: LEASE_SUMMARY_MAX_SECONDS + 1 })).toBe('seconds');
    // Two minutes: 30 s of each.
    expect(fieldOf({ ...good, fromSecond: Math.floor(NOW_SECOND / 60) * 60 - 90, seconds: 60 })).toBe('seconds');
    expect(fieldOf({ ...good, admittedUnits: 1e12 })).toBe('admittedUnits');
    expect(fieldOf({ ...good, admittedUnits: 2 * LIMIT_MAX + 1 })).toBe('admittedUnits');
    expect(fieldOf({ ...good, admittedUnits: 2 * LIMIT_MAX })).toBe('valid');
    expect(fieldOf({ ...good, admittedUnits: 0.5 })).toBe('admittedUnits');
    expect(fieldOf({ ...good, refusedUnits: LEASE_SUMMARY_MAX_PER_SECOND + 1 })).toBe('refusedUnits');
    expect(fieldOf({ ...good, admittedCount: -1 })).toBe('admittedCount');
    expect(fieldOf({ ...good, refusedCount: '3' })).toBe('refusedCount');
    expect(fieldOf({ ...good, hitSeconds: 2 })).toBe('hitSeconds');
    expect(fieldOf({ ...good, tenantId: 'bad tenant!' })).toBe('tenantId');
    expect(fieldOf({ ...good, dimension: 'toString' })).toBe('dimension');
    expect(fieldOf({ ...good, allowance: 'LIVE' })).toBe('allowance');
    expect(fieldOf({ ...good, id: 'not an id!' })).toBe('id');
    expect(fieldOf({ ...good, id: 'x'.repeat(65) })).toBe('id');
    expect(fieldOf({ ...good, fromSecond: 1 })).toBe('fromSecond');
    expect(fieldOf({ ...good, fromSecond: NOW_SECOND + 3600 })).toBe('fromSecond');
    expect(fieldOf({ ...good, fromSecond: 1.5 })).toBe('fromSecond');
    expect(fieldOf(null)).toBe('');
    expect(fieldOf([good])).toBe('');
    // The edges of the window are inside.
    expect(fieldOf({ ...good, fromSecond: (NOW_MS - SEND_TIME_MAX_AGE_MS) / 1000 })).toBe('valid');
    expect(fieldOf({ ...good, fromSecond: (NOW_MS + SEND_TIME_MAX_AHEAD_MS) / 1000 })).toBe('valid');
    expect(fieldOf({ ...good, fromSecond: (NOW_MS + SEND_TIME_MAX_AHEAD_MS) / 1000 + 1 })).toBe('fromSecond');
  });

  it('lets through only summaries within every bound, whatever is sent (property)', () => {
    let runs = 0;
    let valid = 0;
    // Mostly plausible values, so that many summaries pass and their bounds are checked; hostile ones besides.
    const hostile = fc.oneof(
      fc.double(),
      fc.constantFrom(1e12, 2 ** 53, -1, -0, Number.MAX_VALUE, 0.5, NOW_SECOND + 120, NOW_SECOND - 8 * 86_400, 1),
      fc.string(),
      fc.constant(null),
    );
    const number = (plausible: fc.Arbitrary<number>) => fc.oneof({ weight: 12, arbitrary: plausible }, { weight: 1, arbitrary: hostile });
    const count = number(fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 100 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 * LIMIT_MAX }) }));
    const raw = fc.record(
      {
        id: fc.oneof(fc.uuid(), fc.string()),
        tenantId: fc.oneof({ weight: 12, arbitrary: fc.constant('acme') }, { weight: 1, arbitrary: fc.string() }),
        dimension: fc.constantFrom('EGRESS', 'EGRESS', 'EGRESS', 'API_REQUESTS', 'INGEST', 'NOPE'),
        allowance: fc.constantFrom('CONNECTORS', 'DETECTION', 'DETECTION', null, 'LIVE'),
        fromSecond: number(fc.integer({ min: NOW_SECOND - 7 * 86_400 - 120, max: NOW_SECOND + 120 })),
        seconds: number(fc.oneof({ weight: 4, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 61 }) })),
        admittedUnits: count,
        admittedCount: count,
        refusedUnits: count,
        refusedCount: count,
        hitSeconds: number(fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 1 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 61 }) })),
      },
      { requiredKeys: ['tenantId', 'dimension', 'fromSecond', 'seconds', 'admittedUnits', 'admittedCount', 'refusedUnits', 'refusedCount', 'hitSeconds'] },
    );
    fc.assert(
      fc.property(raw, (sent) => {
        runs++;
        const read = readLeaseSummary(sent, NOW_MS);
        if (read.status === 'invalid') {
          expect(read.error.reason.length).toBeGreaterThan(0);
          return;
        }
        valid++;
        const { summary } = read;
        expect(summary.seconds).toBeGreaterThanOrEqual(1);
        expect(summary.seconds).toBeLessThanOrEqual(LEASE_SUMMARY_MAX_SECONDS);
        expect(Math.floor(summary.fromSecond / 60)).toBe(Math.floor((summary.fromSecond + summary.seconds - 1) / 60));
        expect(summary.fromSecond * 1000).toBeGreaterThanOrEqual(NOW_MS - SEND_TIME_MAX_AGE_MS);
        expect((summary.fromSecond + summary.seconds - 1) * 1000).toBeLessThanOrEqual(NOW_MS + SEND_TIME_MAX_AHEAD_MS);
        for (const value of [summary.admittedUnits, summary.admittedMessages, summary.shedUnits, summary.shedMessages, summary.rejectedUnits, summary.rejectedMessages]) {
          expect(Number.isInteger(value) && value >= 0).toBe(true);
        }
        expect(summary.admittedUnits).toBeLessThanOrEqual((summary.seconds + 1) * LIMIT_MAX);
        expect(summary.hitSeconds).toBeLessThanOrEqual(summary.seconds);
      }),
      { numRuns: 5000 },
    );
    console.log(`lease summaries: ${runs} runs completed, ${valid} within bounds`);
    expect(runs).toBeGreaterThanOrEqual(5000);
    // The bounds above were checked on many summaries that passed, not on none.
    expect(valid).toBeGreaterThan(200);
  });
});
