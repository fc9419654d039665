// Per-second demand packed per minute: the limit preview's read model (gl_demand_seconds, migration 0205) and
// the same shape for the part of the ledger the projection has not applied yet (readDemand.ts).
//
// A minute's row holds its recorded seconds as records, appended in the order they were recorded (a row is
// extended by `||`, never rewritten by the projection): per record one header byte, the second's offset in
// the minute (bits 0-5), 0x40 when refused counts follow, 0x80 when the counts are float64 (little-endian)
// rather than unsigned LEB128 varints. Counts are whole in the ledger, so a second costs 3-4 bytes (a third
// of that of a float64 row's counts alone); only a summary spread over several seconds (a span) leaves
// fractions. Two records of one second (two replicas, a leasing client beside the Governor) are summed
// when read.
//
// At 6 M recorded tenant-seconds (a 7-day preview of 1,000 active tenants) this is about 25 MB to read,
// where the ledger's JSON of the same seconds was several GB of summaries to parse and expand.
import type { SourceKeys } from '../ledger/index.ts';

/** The counts of one recorded second, as read. */
export interface SecondCounts {
  units: number;
  messages: number;
  refusedUnits: number;
  refusedMessages: number;
}

const REFUSED = 0x40;
const FLOATS = 0x80;
const OFFSET = 0x3f;

const whole = (value: number) => Number.isSafeInteger(value) && value >= 0;

function pushVarint(bytes: number[], value: number): void {
  while (value >= 128) {
    bytes.push((value % 128) | 128);
    value = Math.floor(value / 128);
  }
  bytes.push(value);
}

const float = new Float64Array(1);
const floatBytes = new Uint8Array(float.buffer);

function pushFloat(bytes: number[], value: number): void {
  float[0] = value;
  for (let i = 0; i < 8; i++) bytes.push(floatBytes[i]!);
}

/** Appends one second's record (offset 0-59 in its minute; counts finite and non-negative). */
export function pushSecond(bytes: number[], offset: number, units: number, messages: number, refusedUnits: number, refusedMessages: number): void {
  const refused = refusedUnits > 0 || refusedMessages > 0;
  const floats = !(whole(units) && whole(messages) && whole(refusedUnits) && whole(refusedMessages));
  bytes.push(offset | (refused ? REFUSED : 0) | (floats ? FLOATS : 0));
  const push = floats ? pushFloat : pushVarint;
  push(bytes, units);
  push(bytes, messages);
  if (refused) {
    push(bytes, refusedUnits);
    push(bytes, refusedMessages);
  }
}

/**
 * Adds the records of `bytes[start, end)` into a minute's slots: `sums[offset * 4 + 0..3]` are units,
 * messages, refused units and refused messages, `present[offset]` set for each second recorded. Answers
 * false (having added what came before) at a record cut short or an offset past the minute: bytes this
 * module did not write. Written without a closure or an object per record: a 7-day preview reads 6 M.
 */
export function addMinute(bytes: Uint8Array, start: number, end: number, sums: Float64Array, present: Uint8Array): boolean {
  let at = start;
  let view: DataView | undefined;
  const values = [0, 0, 0, 0];
  while (at < end) {
    const header = bytes[at++]!;
    const offset = header & OFFSET;
    const count = (header & REFUSED) !== 0 ? 4 : 2;
    if (offset >= 60) return false;
    if ((header & FLOATS) !== 0) {
      if (at + 8 * count > end) return false;
      view ??= new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      for (let i = 0; i < count; i++, at += 8) values[i] = view.getFloat64(at, true);
    } else {
      for (let i = 0; i < count; i++) {
        let value = 0;
        let scale = 1;
        for (;;) {
          if (at >= end || scale > 2 ** 56) return false;
          const byte = bytes[at++]!;
          value += (byte & 127) * scale;
          if (byte < 128) break;
          scale *= 128;
        }
        values[i] = value;
      }
    }
    if (count === 2) values[2] = values[3] = 0;
    const slot = offset * 4;
    for (let i = 0; i < 4; i++) sums[slot + i] = sums[slot + i]! + values[i]!;
    present[offset] = 1;
  }
  return true;
}

/**
 * Reads the records of `bytes[start, end)` straight into `columns` (seconds, units, messages, refused units,
 * refused messages) from row `length` on, and answers the new length; or -1, having written rows past
 * `length` that the caller then overwrites, when the records are not what a minute read once holds: seconds in
 * strictly rising order, whole counts (the caller then adds the minute up with addMinute).
 */
export function readMinuteInOrder(bytes: Uint8Array, start: number, end: number, minuteStart: number, columns: readonly Float64Array[], length: number): number {
  const [seconds, units, messages, refusedUnits, refusedMessages] = columns as [Float64Array, Float64Array, Float64Array, Float64Array, Float64Array];
  let at = start;
  let previous = -1;
  while (at < end) {
    const header = bytes[at++]!;
    const offset = header & OFFSET;
    if (offset <= previous || offset >= 60 || (header & FLOATS) !== 0 || length >= seconds.length) return -1;
    previous = offset;
    const count = (header & REFUSED) !== 0 ? 4 : 2;
    for (let i = 0; i < count; i++) {
      let value = 0;
      let scale = 1;
      for (;;) {
        if (at >= end || scale > 2 ** 56) return -1;
        const byte = bytes[at++]!;
        value += (byte & 127) * scale;
        if (byte < 128) break;
        scale *= 128;
      }
      (i === 0 ? units : i === 1 ? messages : i === 2 ? refusedUnits : refusedMessages)[length] = value;
    }
    if (count === 2) refusedUnits[length] = refusedMessages[length] = 0;
    seconds[length++] = minuteStart + offset;
  }
  return length;
}

/** One minute's records of one (dimension, tenant, allowance), as they accumulate. */
export interface DemandMinute {
  dimension: string;
  tenantId: string;
  allowance: string;
  minuteStart: number;
  bytes: number[];
}

/**
 * Seconds of demand collected per (dimension, tenant, allowance, minute) before they are written (the
 * projection) or read (the ledger's tail). A summary of several seconds is spread evenly over them, as the
 * Governor spread its units: each second gets an equal share of its units and messages.
 */
export class DemandMinutes {
  // Minutes by tenant, each tenant's list scanned for the dimension, allowance and minute: a tenant ID expanded
  // from a summary reference is the same string every time (src/ledger/catalog/summaryRefs.ts), whose hash V8
  // keeps. Making an id of the four for every second added (a number and three strings joined, then hashed) was
  // the thread's largest cost and most of its garbage at 50,000 active tenants. Past SCANNED_MINUTES minutes of
  // one tenant, the others are found by that id.
  private readonly byTenant = new Map<string, DemandMinute[]>();
  private readonly byId = new Map<string, DemandMinute>();
  private readonly all: DemandMinute[] = [];
  private readonly bySource = new WeakMap<SourceKeys, PositionMinutes>();
  /** Bytes held, for a writer that flushes past a bound. */
  bytes = 0;

  get size(): number {
    return this.all.length;
  }

  /**
   * The minutes found so far for the positions of `source` (a key source: src/ledger/catalog/summaryRefs.ts),
   * for addSecondAt; kept while these minutes are.
   */
  positionsOf(source: SourceKeys): PositionMinutes {
    let found = this.bySource.get(source);
    if (found === undefined) this.bySource.set(source, (found = new Array<DemandMinute | undefined>(source.tenantId.length).fill(undefined)));
    return found;
  }

  /**
   * addSpan of one second (`second`, kept whatever the range: the caller has checked it), its minute found by the
   * position of its keys in their source: the same position is the same keys in every reference to the source,
   * so a page of references finds each tenant's minute once per minute, not once per second by its keys. A
   * position's minute is kept until a second of another minute comes for it (summaries of two minutes in one
   * reference cost a look-up each, as by keys, and no clearing of the whole list).
   */
  addSecondAt(at: PositionMinutes, position: number, dimension: string, tenantId: string, allowance: string, second: number, counts: SecondCounts): void {
    if (counts.units <= 0 && counts.messages <= 0) return;
    const minuteStart = second - (second % 60);
    let minute = at[position];
    if (minute === undefined || minute.minuteStart !== minuteStart) at[position] = minute = this.minuteOf(dimension, tenantId, allowance, minuteStart);
    const before = minute.bytes.length;
    pushSecond(minute.bytes, second - minuteStart, counts.units, counts.messages, counts.refusedUnits, counts.refusedMessages);
    this.bytes += minute.bytes.length - before;
  }

  /** Adds a span of `seconds` seconds from `fromSecond`; only its seconds in [rangeFrom, rangeTo) are kept. */
  addSpan(
    dimension: string,
    tenantId: string,
    allowance: string,
    fromSecond: number,
    seconds: number,
    counts: SecondCounts,
    rangeFrom = Number.NEGATIVE_INFINITY,
    rangeTo = Number.POSITIVE_INFINITY,
  ): void {
    if (counts.units <= 0 && counts.messages <= 0) return;
    const share = 1 / seconds;
    for (let second = Math.max(fromSecond, rangeFrom); second < fromSecond + seconds && second < rangeTo; second++) {
      const minuteStart = second - (second % 60);
      const minute = this.minuteOf(dimension, tenantId, allowance, minuteStart);
      const before = minute.bytes.length;
      if (seconds === 1) pushSecond(minute.bytes, second - minuteStart, counts.units, counts.messages, counts.refusedUnits, counts.refusedMessages);
      else {
        pushSecond(minute.bytes, second - minuteStart, counts.units * share, counts.messages * share, counts.refusedUnits * share, counts.refusedMessages * share);
      }
      this.bytes += minute.bytes.length - before;
    }
  }

  /** Appends records already packed (`bytes[start, end)`, as pushSecond wrote them) to a minute's. */
  appendRecords(dimension: string, tenantId: string, allowance: string, minuteStart: number, bytes: ArrayLike<number>, start = 0, end = bytes.length): void {
    if (end <= start) return;
    const minute = this.minuteOf(dimension, tenantId, allowance, minuteStart);
    for (let at = start; at < end; at++) minute.bytes.push(bytes[at]!);
    this.bytes += end - start;
  }

  values(): IterableIterator<DemandMinute> {
    return this.all.values();
  }

  private minuteOf(dimension: string, tenantId: string, allowance: string, minuteStart: number): DemandMinute {
    const scanned = this.byTenant.get(tenantId);
    if (scanned !== undefined) {
      for (let i = 0; i < scanned.length; i++) {
        const minute = scanned[i]!;
        if (minute.minuteStart === minuteStart && minute.dimension === dimension && minute.allowance === allowance) return minute;
      }
      if (scanned.length >= SCANNED_MINUTES) {
        const found = this.byId.get(minuteId(dimension, tenantId, allowance, minuteStart));
        if (found !== undefined) return found;
      }
    }
    const minute: DemandMinute = { dimension, tenantId, allowance, minuteStart, bytes: [] };
    this.all.push(minute);
    if (scanned === undefined) this.byTenant.set(tenantId, [minute]);
    else if (scanned.length < SCANNED_MINUTES) scanned.push(minute);
    else this.byId.set(minuteId(dimension, tenantId, allowance, minuteStart), minute);
    return minute;
  }
}

/** The minute last found for each position of a key source (DemandMinutes.positionsOf). */
export type PositionMinutes = (DemandMinute | undefined)[];

/** Minutes of one tenant found by scanning its list; more (many allowances or a long page) are found by id. */
const SCANNED_MINUTES = 16;

const minuteId = (dimension: string, tenantId: string, allowance: string, minuteStart: number) => `${minuteStart}\u0000${dimension}\u0000${tenantId}\u0000${allowance}`;
