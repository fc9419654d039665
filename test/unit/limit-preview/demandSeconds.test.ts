// The limit preview's per-second demand: what the read model packs reads back as it was recorded, and the
// replay's shortcut (a limit that cannot refuse is not replayed) agrees with the full replay.
import { describe, expect, it } from 'vitest';
import { addMinute, DemandMinutes, pushSecond } from '../../../src/limit-preview/demandSeconds.ts';
import { addSummaryDemand, EVERY_REPLAYED_SUMMARY } from '../../../src/limit-preview/summaryDemand.ts';
import { cannotRefuse, peakUnits, RefusalTally, replaySeries, type ReplayLimit } from '../../../src/limit-preview/replayDemand.ts';
import type { DemandSeries } from '../../../src/limit-preview/readDemand.ts';
import { ADMISSION_FIELDS } from '../../../src/ledger/index.ts';
import { TokenBucket } from '../../../src/governance/index.ts';

/** The replay step by step through the library's TokenBucket, every take on its own: what replaySeries must equal. */
function replayStepByStep(demand: DemandSeries, ratePerSecond: number, burst: number): { refusedUnits: number; limitedSeconds: number } {
  const bucket = new TokenBucket();
  let refusedUnits = 0;
  let limitedSeconds = 0;
  for (let i = 0; i < demand.seconds.length; i++) {
    const steps = Math.min(100, Math.max(1, Math.round(demand.messages[i]!)));
    const units = demand.units[i]! / steps;
    let refused = 0;
    for (let step = 0; step < steps; step++) if (!bucket.take(units, demand.seconds[i]! * 1000 + Math.floor((step * 1000) / steps), ratePerSecond, burst)) refused++;
    refusedUnits += refused * units;
    if (refused > 0) limitedSeconds++;
  }
  return { refusedUnits, limitedSeconds };
}

function decode(bytes: number[]): { sums: Float64Array; present: Uint8Array; ok: boolean } {
  const sums = new Float64Array(240);
  const present = new Uint8Array(60);
  // Read from the middle of a longer buffer, as a preview reads a tenant's minutes end to end.
  const padded = Uint8Array.from([9, 9, ...bytes, 9]);
  const ok = addMinute(padded, 2, 2 + bytes.length, sums, present);
  return { sums, present, ok };
}

const seconds = (offset: number, sums: Float64Array) => Array.from(sums.subarray(offset * 4, offset * 4 + 4));

describe('per-second demand, packed per minute', () => {
  it('reads back whole counts (small, past 2^32, up to 2^53), fractions and refusals; two records of a second are summed', () => {
    const bytes: number[] = [];
    pushSecond(bytes, 0, 12, 6, 0, 0);
    pushSecond(bytes, 59, 2 ** 40 + 3, 2 ** 53 - 1, 7, 1);
    pushSecond(bytes, 7, 1 / 3, 2.5, 0.25, 0);
    pushSecond(bytes, 0, 3, 1, 3, 1);
    // A plain second of small counts without refusals costs 3 bytes.
    const plain: number[] = [];
    pushSecond(plain, 0, 12, 6, 0, 0);
    expect(plain).toHaveLength(3);
    const { sums, present, ok } = decode(bytes);
    expect(ok).toBe(true);
    expect(seconds(0, sums)).toEqual([15, 7, 3, 1]);
    expect(seconds(59, sums)).toEqual([2 ** 40 + 3, 2 ** 53 - 1, 7, 1]);
    expect(seconds(7, sums)).toEqual([1 / 3, 2.5, 0.25, 0]);
    expect([...present].flatMap((set, offset) => (set ? [offset] : []))).toEqual([0, 7, 59]);
  });

  it('stops at bytes it did not write: a record cut short, an offset past the minute', () => {
    const bytes: number[] = [];
    pushSecond(bytes, 1, 300, 2, 0, 0);
    expect(decode(bytes.slice(0, -1)).ok).toBe(false);
    expect(decode([60, 1, 1]).ok).toBe(false);
    const { sums, ok } = decode([...bytes, 61, 1, 1]);
    expect(ok).toBe(false);
    expect(seconds(1, sums)).toEqual([300, 2, 0, 0]);
  });

  it('takes summaries as offered (admitted + shed + rejected) and refused (shed + rejected), spreads a span over its seconds and minutes, and passes over what it cannot read', () => {
    const minutes = new DemandMinutes();
    const row = (tenantId: unknown, dimension: string, fromSecond: unknown, spanSeconds: number, admitted: number, shed: number, rejected: number) =>
      ADMISSION_FIELDS.map((field) =>
        ({ tenantId, dimension, allowance: 'LIVE', fromSecond, seconds: spanSeconds, admittedUnits: admitted, admittedMessages: admitted, shedUnits: shed, shedMessages: shed, rejectedUnits: rejected, rejectedMessages: rejected })[
          field as string
        ] ?? 0,
      );
    addSummaryDemand(
      minutes,
      {
        fields: ADMISSION_FIELDS,
        rows: [
          row('acme', 'INGEST', 120, 1, 10, 2, 3),
          row('acme', 'INGEST', 178, 4, 8, 0, 0),
          row('acme', 'UNDELIVERED_COMMANDS', 120, 1, 10, 0, 0),
          row(7, 'INGEST', 120, 1, 10, 0, 0),
          row('acme', 'INGEST', 1.5, 1, 10, 0, 0),
          row('acme', 'INGEST', 0, 7200, 10, 0, 0),
        ],
      },
      EVERY_REPLAYED_SUMMARY,
    );
    const read = new Map([...minutes.values()].map((minute) => [`${minute.dimension} ${minute.tenantId} ${minute.minuteStart}`, decode(minute.bytes)]));
    expect([...read.keys()]).toEqual(['INGEST acme 120', 'INGEST acme 180']);
    const first = read.get('INGEST acme 120')!;
    expect(seconds(0, first.sums)).toEqual([15, 15, 5, 5]);
    expect(seconds(58, first.sums)).toEqual([2, 2, 0, 0]);
    expect(seconds(59, first.sums)).toEqual([2, 2, 0, 0]);
    const second = read.get('INGEST acme 180')!;
    expect([...second.present].flatMap((set, offset) => (set ? [offset] : []))).toEqual([0, 1]);
  });
});

describe('DemandMinutes', () => {
  it("keeps one record list per dimension, tenant, allowance and minute, past the minutes it scans per tenant too", () => {
    const minutes = new DemandMinutes();
    const T = 1_764_000_000 - (1_764_000_000 % 60);
    const one = { units: 1, messages: 1, refusedUnits: 0, refusedMessages: 0 };
    // 40 minutes x 2 allowances x 2 dimensions of one tenant (160 lists, most found past the scanned 16), each second
    // of a minute added twice, in two rounds; another tenant beside it.
    for (let round = 0; round < 2; round++) {
      for (let minute = 0; minute < 40; minute++) {
        for (const dimension of ['API_REQUESTS', 'INGEST']) {
          for (const allowance of ['a', 'b']) minutes.addSpan(dimension, 'acme', allowance, T + minute * 60 + 7, 1, one);
        }
        minutes.addSpan('INGEST', 'globex', '', T + minute * 60 + 7, 1, one);
      }
    }
    expect(minutes.size).toBe(200);
    const seen = new Set<string>();
    for (const minute of minutes.values()) {
      const sums = new Float64Array(240);
      const present = new Uint8Array(60);
      expect(addMinute(Uint8Array.from(minute.bytes), 0, minute.bytes.length, sums, present)).toBe(true);
      expect([present[7], sums[7 * 4], sums[7 * 4 + 1]]).toEqual([1, 2, 2]);
      seen.add(`${minute.dimension} ${minute.tenantId} ${minute.allowance} ${minute.minuteStart}`);
    }
    expect(seen.size).toBe(200);
  });
});

function series(unitsPerSecond: readonly number[]): DemandSeries {
  return {
    seconds: unitsPerSecond.map((_, i) => 1_764_000_000 + i),
    units: [...unitsPerSecond],
    messages: [...unitsPerSecond],
    refusedUnits: unitsPerSecond.map(() => 0),
    refusedMessages: unitsPerSecond.map(() => 0),
  };
}

describe('the replay', () => {
  it('refuses 20/s for 60 s at 5/s (burst 10) as worked by hand: about 10 + 5 x 60 admitted of 1,200', () => {
    const tally = new RefusalTally();
    replaySeries(series(Array.from({ length: 60 }, () => 20)), { kind: 'TOKEN_BUCKET', ratePerSecond: 5, burst: 10 }, tally);
    expect(Math.abs(tally.refusedUnits - 890) / 890).toBeLessThan(0.02);
    expect(tally.limitedSeconds).toBeGreaterThanOrEqual(59);
    expect(tally.worstMinute()?.refusedUnits).toBeCloseTo(tally.refusedUnits, 6);
  });

  it('takes a second at once (heavy seconds, light ones on a full bucket) as the library takes it step by step', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    for (let round = 0; round < 200; round++) {
      const length = 300;
      const demand: DemandSeries = {
        seconds: Array.from({ length }, (_, i) => 1_764_000_000 + i + Math.floor(i / 50) * 30),
        units: Array.from({ length }, () => (random() < 0.2 ? Math.floor(random() * 200) : Math.floor(random() * 40) + 1)),
        messages: [],
        refusedUnits: Array.from({ length }, () => 0),
        refusedMessages: Array.from({ length }, () => 0),
      };
      (demand.messages as number[]).push(...Array.from({ length }, (_, i) => Math.max(1, Math.round((demand.units[i]! * (0.2 + random())) / 2))));
      // Rates and bursts off the integers: with whole ones, takes often land exactly at the edge of the tokens,
      // where the last bit of a float sum decides, and the two orders of summing decide a few (0.1%) apart.
      const ratePerSecond = 1.123456 + random() * 50;
      const burst = ratePerSecond * (1 + Math.floor(random() * 4)) + 0.0731;
      const tally = new RefusalTally();
      replaySeries(demand, { kind: 'TOKEN_BUCKET', ratePerSecond, burst }, tally);
      const expected = replayStepByStep(demand, ratePerSecond, burst);
      expect(Math.abs(tally.refusedUnits - expected.refusedUnits), JSON.stringify({ ratePerSecond, burst })).toBeLessThanOrEqual(1e-9 * Math.max(1, expected.refusedUnits));
      expect(tally.limitedSeconds).toBe(expected.limitedSeconds);
    }
  });

  it('skips only limits that the full replay finds refuse nothing, on random demand at and around the bound', () => {
    let seed = 42;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    let skipped = 0;
    for (let round = 0; round < 400; round++) {
      const demand = series(Array.from({ length: 120 }, () => (random() < 0.3 ? 0 : Math.floor(random() * 40) + 1)));
      const peak = peakUnits(demand);
      const rate = Math.max(1, Math.round(peak * (0.8 + random() * 0.4)));
      const limits: ReplayLimit[] = [
        { kind: 'TOKEN_BUCKET', ratePerSecond: rate, burst: Math.max(rate, Math.round(2 * peak * (0.8 + random() * 0.4))) },
        { kind: 'FIXED_WINDOW', ratePerSecond: rate, burst: rate },
      ];
      for (const limit of limits) {
        if (!cannotRefuse(limit, peak)) continue;
        skipped++;
        const tally = new RefusalTally();
        replaySeries(demand, limit, tally);
        expect(tally.refusedUnits, JSON.stringify({ limit, peak })).toBe(0);
      }
    }
    expect(skipped).toBeGreaterThan(50);
  });
});
