// The preview as a series a chart can draw (the console's, before a change is applied): per bucket of whole
// minutes, the recorded demand of the affected tenants, the busiest second one limiter saw, and what the
// proposed limit, the limit in force now and the limits then in force refused. At most MAX_SERIES_POINTS
// buckets whatever the range: a bucket is as many minutes as that takes (7 days: 21 minutes).
import type { DemandSeries } from './readDemand.ts';

/** Points a series has at most: a month of minutes would be 44,640. */
export const MAX_SERIES_POINTS = 500;

export interface PreviewPoint {
  start: Date;
  /** The bucket's length: a whole number of minutes. */
  seconds: number;
  /** Units offered (admitted + shed + rejected) by every affected tenant in the bucket, as recorded. */
  demandUnits: number;
  /** The most units one (tenant, allowance) offered in one second of the bucket: what one limiter saw at its busiest. */
  peakUnitsPerSecond: number;
  /** Units the proposed limit would have refused in the bucket. */
  refusedUnits: number;
  /** Units the limit in force now would have refused. */
  currentRefusedUnits: number;
  /** Units the limits then in force did refuse (shed + rejected), as recorded. */
  recordedRefusedUnits: number;
}

export class PreviewSeries {
  private readonly startSecond: number;
  readonly bucketSeconds: number;
  private readonly demand: Float64Array;
  private readonly peak: Float64Array;
  private readonly refused: Float64Array;
  private readonly currentRefused: Float64Array;
  private readonly recordedRefused: Float64Array;

  /** Over [fromSecond, toSecond): the first bucket starts at the minute fromSecond lies in. */
  constructor(
    private readonly fromSecond: number,
    private readonly toSecond: number,
  ) {
    this.startSecond = Math.floor(fromSecond / 60) * 60;
    const minutes = Math.max(1, Math.ceil((toSecond - this.startSecond) / 60));
    this.bucketSeconds = 60 * Math.ceil(minutes / MAX_SERIES_POINTS);
    const buckets = Math.ceil((toSecond - this.startSecond) / this.bucketSeconds);
    this.demand = new Float64Array(buckets);
    this.peak = new Float64Array(buckets);
    this.refused = new Float64Array(buckets);
    this.currentRefused = new Float64Array(buckets);
    this.recordedRefused = new Float64Array(buckets);
  }

  private bucketOf(second: number): number {
    return Math.floor((second - this.startSecond) / this.bucketSeconds);
  }

  /** One (tenant, allowance)'s recorded seconds. */
  addDemand(recorded: DemandSeries): void {
    const { seconds, units, refusedUnits } = recorded;
    for (let i = 0; i < seconds.length; i++) {
      const second = seconds[i]!;
      if (second < this.fromSecond || second >= this.toSecond) continue;
      const bucket = this.bucketOf(second);
      const secondUnits = units[i]!;
      this.demand[bucket]! += secondUnits;
      this.recordedRefused[bucket]! += refusedUnits[i]!;
      if (secondUnits > this.peak[bucket]!) this.peak[bucket] = secondUnits;
    }
  }

  /** The replays' refused units per minute (RefusalTally.byMinute, summed over tenants). */
  addRefused(proposedByMinute: ReadonlyMap<number, number>, currentByMinute: ReadonlyMap<number, number>): void {
    for (const [minute, units] of proposedByMinute) this.refused[this.bucketOf(minute)]! += units;
    for (const [minute, units] of currentByMinute) this.currentRefused[this.bucketOf(minute)]! += units;
  }

  points(): PreviewPoint[] {
    return Array.from(this.demand, (demandUnits, bucket) => ({
      start: new Date((this.startSecond + bucket * this.bucketSeconds) * 1000),
      seconds: this.bucketSeconds,
      demandUnits: Math.round(demandUnits),
      peakUnitsPerSecond: Math.round(this.peak[bucket]! * 100) / 100,
      refusedUnits: Math.round(this.refused[bucket]!),
      currentRefusedUnits: Math.round(this.currentRefused[bucket]!),
      recordedRefusedUnits: Math.round(this.recordedRefused[bucket]!),
    }));
  }
}
