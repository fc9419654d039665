// The Governor's tallies on their way to the Recorder. Each decision is counted per second in its allowance's
// own fields (AllowanceState.count); the allowances with counts are listed here, and a timer ticking just
// after each boundary of the flush interval collects their closed seconds into an AdmissionBatch and hands
// it to the Recorder. `close()` flushes.
//
// A summary never spans more than the flush interval, whatever times the decisions carry (a BACKLOG message
// is metered at its send time, an admission at its `at`): the seconds are cut into windows of the flush
// interval (whole seconds, aligned to the epoch), and each summary covers seconds of one window only. A
// decision in another window than the allowance's counts so far hands those counts to the batch first (a
// split), so a drain of messages sent over an hour becomes one summary per window it touched, never one
// summary spanning the hour; and no summary can span decades (issue 34: one spanning 56 years made the trend
// projection cut ~30 M minute buckets).
//
// While a Recorder call is running or has failed, what is counted goes into the next batch, one summary per
// (key, window). So that memory stays bounded however long the ledger is away, that batch holds at most
// MAX_PENDING_SUMMARIES summaries: past it, a key's counts of a new window are added to the key's latest
// summary in the batch, whose window does not grow (the counts are kept, their seconds are clamped into that
// window) and counted in `clamped` (GovernorStats.clampedTallies). A key with no summary in the batch yet
// still gets one, so the batch holds at most MAX_PENDING_SUMMARIES + one summary per active key.
import { randomUUID } from 'node:crypto';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import { CAUSE_NAMES, DECISION_AT, DECISION_SIZE } from './allowanceState.ts';
import { Tally, type AllowanceState } from './allowanceState.ts';
import type { AdmissionSummary, Recorder, UnresolvedAdmissionSummary } from './types.ts';
import { RecordedInPart } from './types.ts';

export interface TalliesOptions {
  /** Without one, decisions are not tallied at all (the timer still ticks for `onTick`). */
  recorder: Recorder | null;
  /** Wall clock (ms): which seconds are closed. */
  now: () => number;
  flushIntervalMs: number;
  /** Summaries the batch being filled may hold (MAX_PENDING_SUMMARIES by default). */
  maxPendingSummaries?: number;
  /** Runs on every tick, before the tallies are collected (the Governor reads its clock, sweeps idle names). */
  onTick: () => void;
  onError: (error: unknown) => void;
}

/** How long after a flush-interval boundary the timer ticks: the closing second's last admits land first. */
const TICK_AFTER_BOUNDARY_MS = 20;

/** Dirty allowances collected per turn of the event loop (a few ms of work). */
const COLLECT_SLICE = 1_000;

/**
 * Summaries the batch being filled may hold before a key's new windows are clamped into its latest one: a
 * ledger outage of 50 s at 5,000 active keys and a 1 s flush interval, about 65 MB (266 bytes a summary with
 * its keys, measured at 500,000).
 */
export const MAX_PENDING_SUMMARIES = 250_000;

/** The window of the flush interval a summary may span, in whole seconds (at least one). */
export function summaryWindowSeconds(flushIntervalMs: number): number {
  return Math.max(1, Math.ceil(flushIntervalMs / 1000));
}

export class Tallies {
  failures = 0;
  /** Tallies whose seconds were clamped into another window of their key because the batch was full. */
  get clamped(): number {
    return this.clampedBefore + this.batch.clamped;
  }
  private clampedBefore = 0;
  private readonly recorder: Recorder | null;
  /** The seconds one summary may span (the flush interval). */
  readonly windowSeconds: number;
  private readonly maxPendingSummaries: number;
  private dirty: AllowanceState[] = [];
  /** collect's tally of one allowance's cell (takeCellTally): one object for every allowance, cleared after each. */
  private readonly cellTally = new Tally();
  private batch: AdmissionBatch;
  /** A batch the Recorder failed to take, with the id it was offered under; offered again before anything newer. */
  private unacknowledged: { batch: AdmissionBatch; id: string } | null = null;
  private recording: Promise<void> | null = null;
  /**
   * Summaries of batches a Recorder that lets go of them (Recorder.released) has taken, made again by
   * the next batches: at 50,000 active tenants 51,000 new summaries a second lived through a flush (its
   * append), and the young-generation collections that met them moved about 5 MB of them to the old
   * generation, 30-85 ms each, the longest stalls of the event loop once settled (bench/scale.ts, --trace-gc-nvp).
   */
  private readonly spare = new SpareSummaries();
  private lastRecordError: unknown = undefined;
  private timer: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(private readonly options: TalliesOptions) {
    this.recorder = options.recorder;
    this.windowSeconds = summaryWindowSeconds(options.flushIntervalMs);
    this.maxPendingSummaries = options.maxPendingSummaries ?? MAX_PENDING_SUMMARIES;
    this.batch = new AdmissionBatch(this.windowSeconds, this.maxPendingSummaries, this.spare);
    this.scheduleTick();
  }

  /**
   * Where a caller of count() writes the decision's time (DECISION_AT, ms) and units (DECISION_UNITS) just
   * before the call: numbers in a Float64Array are never boxed, arguments are (allowanceState.ts, DECISION_AT).
   */
  readonly decision = new Float64Array(DECISION_SIZE);

  /**
   * Counts one decision, its numbers in `decision` (nothing without a Recorder). `refused` is an outcome code
   * of AllowanceState.count (0 admitted, 1 shed, 2 rejected, 3 unauthenticated); `cause` is the unresolved
   * cause, -1 when the tenant's ceilings are known.
   */
  count(allowance: AllowanceState, byMessage: boolean, refused: number, cause: number): void {
    // A message admitted before decoding is counted by the readings charge that follows it.
    if (this.recorder === null || (byMessage && refused === 0)) return;
    const window = Math.floor(Math.floor(this.decision[DECISION_AT]! / 1000) / this.windowSeconds);
    // The allowance's counts so far lie in one window: counts of another go to the batch first (allocates
    // only when the window changes, at most once a flush interval for live traffic; collect would make the
    // same summary a moment later).
    if (window !== allowance.tallyWindow) {
      if (allowance.dirty) this.handOff(allowance);
      allowance.tallyWindow = window;
    }
    const becameDirty = allowance.count(this.decision, byMessage, refused, cause);
    if (becameDirty) this.dirty.push(allowance);
  }

  /** Moves every count of the allowance, the open second's too, into the batch (it stays listed as dirty). */
  private handOff(allowance: AllowanceState): void {
    allowance.closeOpenSecond();
    const closed = allowance.closed;
    if (closed !== null && closed.decisions > 0) this.batch.add(allowance, closed);
    allowance.releaseClosed();
  }

  /** Hands every tally, the current second included, to the Recorder and waits for it. */
  async flush(): Promise<void> {
    await this.record(true);
    if (this.lastRecordError !== undefined) {
      const error = this.lastRecordError;
      this.lastRecordError = undefined;
      throw error;
    }
  }

  /** Stops the timer and flushes; rejects if the Recorder could not take the last batch. */
  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.timer);
    await this.flush();
  }

  /**
   * Ticks just after each boundary of the flush interval (wall clock), so a second's decisions go to the
   * Recorder as soon as the second is over: a process killed outright (SIGKILL) loses at most the decisions of
   * the interval under way and of a batch whose append had not committed yet.
   */
  private scheduleTick(): void {
    if (this.closing) return;
    const interval = this.options.flushIntervalMs;
    this.timer = setTimeout(() => {
      this.tick();
      this.scheduleTick();
    }, interval - (Date.now() % interval) + TICK_AFTER_BOUNDARY_MS);
    this.timer.unref();
  }

  private tick(): void {
    this.options.onTick();
    // A slow Recorder is not queued behind: its windows keep merging until it is free again.
    if (this.recording === null) void this.record(false);
  }

  private async record(includeCurrentSecond: boolean): Promise<void> {
    while (this.recording !== null) await this.recording;
    if (this.recorder === null) return;
    // Collecting is part of the recording: it yields the event loop, and a second record() must wait for it.
    this.recording = this.collectAndDeliver(this.recorder, includeCurrentSecond).finally(() => {
      this.recording = null;
    });
    await this.recording;
  }

  private async collectAndDeliver(recorder: Recorder, includeCurrentSecond: boolean): Promise<void> {
    await this.collect(includeCurrentSecond);
    if (this.batch.isEmpty && this.unacknowledged === null) return;
    await this.deliver(recorder);
  }

  /**
   * Offers the batch the Recorder failed to take, if any, again under its id and unchanged, then the batch
   * collected since. A failure may hide an append that did commit (the connection dropped before its
   * acknowledgement): the same id lets the Recorder store it once. What is counted meanwhile merges into the
   * next batch, so memory stays bounded by active keys however long the ledger is away.
   */
  private async deliver(recorder: Recorder): Promise<void> {
    try {
      if (this.unacknowledged !== null) {
        const { batch, id } = this.unacknowledged;
        await recorder.record(batch.admissions, [...batch.unresolved.values()], id);
        this.unacknowledged = null;
        this.release(recorder, batch);
      }
      if (!this.batch.isEmpty) {
        const batch = this.batch;
        this.clampedBefore += batch.clamped;
        this.batch = new AdmissionBatch(this.windowSeconds, this.maxPendingSummaries, this.spare);
        this.unacknowledged = { batch, id: randomUUID() };
        await recorder.record(batch.admissions, [...batch.unresolved.values()], this.unacknowledged.id);
        this.unacknowledged = null;
        this.release(recorder, batch);
      }
      this.lastRecordError = undefined;
    } catch (error) {
      // Part of the batch was stored before the failure: keep only the rest, under a new id (its events are
      // new ones; the stored part's ids must not be reused for them).
      if (error instanceof RecordedInPart && this.unacknowledged !== null) {
        this.unacknowledged.batch.forget(error.admissions, error.unresolved);
        this.unacknowledged = this.unacknowledged.batch.isEmpty ? null : { batch: this.unacknowledged.batch, id: randomUUID() };
      }
      this.failures++;
      this.lastRecordError = error;
      this.options.onError(error);
    }
  }

  /** A batch the Recorder took: its summaries are made again by later batches when the Recorder lets go of them. */
  private release(recorder: Recorder, batch: AdmissionBatch): void {
    if (recorder.released === undefined) return;
    recorder.released(batch.admissions);
    this.spare.take(batch.admissions);
  }

  /**
   * Moves the closed seconds of every dirty allowance into the batch, COLLECT_SLICE allowances per turn of
   * the event loop: at 50,000 active tenants one pass held the loop, and every admission, for tens of
   * milliseconds. Admits go on between slices: one to an allowance not reached yet lands in its open
   * second (or closes the one before, which this pass then collects); one to an allowance already passed,
   * or to a new one, lists it as dirty again for the next pass.
   */
  private async collect(includeCurrentSecond: boolean): Promise<void> {
    const nowSecond = Math.floor(this.options.now() / 1000);
    const dirty = this.dirty;
    this.dirty = [];
    for (let index = 0; index < dirty.length; index++) {
      if (index > 0 && index % COLLECT_SLICE === 0) await yieldTurn();
      const allowance = dirty[index]!;
      // The common case: every count of the allowance is in its armed cell (an active tenant's admissions through
      // admit's fast path). Handed over from the cell alone: the allowance's count fields, spread over several
      // cache lines, and a Tally of its own are neither read nor written (at 10,000 active tenants, one
      // admission each a second: 110-130 ns an allowance against 140-185 through the fields).
      const cellSecond = allowance.onlyCellSecond();
      if (cellSecond === cellSecond) {
        if (!includeCurrentSecond && cellSecond >= nowSecond) {
          // Its second is still open: it stays armed while it counted something (as the open second would).
          if (allowance.cellCounted()) this.dirty.push(allowance);
          else this.forget(allowance);
          continue;
        }
        const cellTally = this.cellTally;
        if (allowance.takeCellTally(cellTally, cellSecond)) {
          this.batch.add(allowance, cellTally);
          cellTally.clear();
          if (this.armNext(allowance, cellSecond + 1, nowSecond)) {
            this.dirty.push(allowance);
            continue;
          }
        }
        this.forget(allowance);
        continue;
      }
      // The cell's counts first: an armed cell (below) may hold counts of an open second with no decision yet.
      allowance.foldCellTally();
      let armed = false;
      if (allowance.openDecisions > 0 && (includeCurrentSecond || allowance.openSecond < nowSecond)) {
        const next = allowance.openSecond + 1;
        allowance.closeOpenSecond();
        armed = this.armNext(allowance, next, nowSecond);
      }
      const closed = allowance.closed;
      if (closed !== null && closed.decisions > 0) this.batch.add(allowance, closed);
      allowance.releaseClosed();
      if (allowance.openDecisions > 0 || armed) this.dirty.push(allowance);
      else this.forget(allowance);
    }
  }

  /**
   * An allowance active in the second just closed is likely active in the next one: its cell is armed for it
   * (unless that second is over already), so admit's fast path counts that second's admissions from the first
   * one on, without opening the second out of line (count()). False when not armed.
   */
  private armNext(allowance: AllowanceState, next: number, nowSecond: number): boolean {
    if (next < nowSecond || !allowance.armCell(next)) return false;
    allowance.tallyWindow = Math.floor(next / this.windowSeconds);
    return true;
  }

  /** No longer listed as dirty: nothing more is counted in its cell. */
  private forget(allowance: AllowanceState): void {
    allowance.dirty = false;
    allowance.disarmCell();
  }
}

/** Numbers the batches (AdmissionBatch.serial). */
let batchSerials = 0;

/**
 * The closed tallies of one delivery. Entries are keyed by (tenant, dimension, allowance, window) or (tenant,
 * dimension, cause, window), so no entry spans more than one window of `windowSeconds`; a batch the Recorder
 * failed to take stays as it is, and what is counted meanwhile goes into the next one. Past `maxSummaries`
 * a key's new window is clamped into the key's latest entry (see the head of this file).
 */

export class AdmissionBatch {
  /** The admissions' summaries, in the order they were made. */
  admissions: AdmissionSummary[] = [];
  readonly unresolved = new Map<string, UnresolvedAdmissionSummary>();
  /**
   * Which batch this is, for the allowances: each knows the batch and the place in `admissions` of its entry of
   * its latest window (AllowanceState.batchSerial, batchEntry), so the common add (an allowance's one window in
   * a batch) looks nothing up. An entry's window is its fromSecond's (an entry only widens within its window).
   */
  private serial = ++batchSerials;
  /**
   * Entries of a key's earlier windows, by the key and the window: made when a key's traffic reaches a second
   * window within one batch (a slow Recorder, BACKLOG send times), so the common add never builds this key.
   */
  private earlierAdmissions: Map<string, AdmissionSummary> | null = null;
  private readonly latestUnresolved = new Map<string, UnresolvedAdmissionSummary>();
  /** Tallies added to an entry of another window because the batch was full. */
  clamped = 0;

  constructor(
    private readonly windowSeconds = 1,
    private readonly maxSummaries = MAX_PENDING_SUMMARIES,
    /** Where its summaries come from when a Recorder released earlier ones (Tallies.spare). */
    private readonly spare: SpareSummaries | null = null,
  ) {}

  get isEmpty(): boolean {
    return this.admissions.length === 0 && this.unresolved.size === 0;
  }

  /** Drops entries a Recorder stored before it failed (RecordedInPart), so the next try does not count them twice. */
  forget(admissions: ReadonlySet<AdmissionSummary>, unresolved: ReadonlySet<UnresolvedAdmissionSummary>): void {
    this.admissions = this.admissions.filter((entry) => !admissions.has(entry));
    // The places the allowances know are void now. A batch offered to a Recorder is never added to again (Tallies
    // fills a new one), so none needs finding after this.
    this.serial = ++batchSerials;
    if (this.earlierAdmissions !== null) for (const [key, entry] of this.earlierAdmissions) if (admissions.has(entry)) this.earlierAdmissions.delete(key);
    for (const [key, entry] of this.unresolved) if (unresolved.has(entry)) this.unresolved.delete(key);
    for (const [key, entry] of this.latestUnresolved) if (unresolved.has(entry)) this.latestUnresolved.delete(key);
  }

  /** Adds a tally whose seconds lie in one window (Tallies hands off at each new window). */
  add(allowance: AllowanceState, tally: Tally): void {
    const { tenantId, slot } = allowance;
    const window = Math.floor(tally.fromSecond / this.windowSeconds);
    const latest = allowance.batchSerial === this.serial ? this.admissions[allowance.batchEntry] : undefined;
    let entry: AdmissionSummary | undefined;
    if (latest !== undefined) {
      entry = Math.floor(latest.fromSecond / this.windowSeconds) === window ? latest : this.earlierAdmissions?.get(`${allowance.tallyKey}\u0000${window}`);
    }
    let clamp = false;
    if (entry === undefined && latest !== undefined && this.admissions.length + this.unresolved.size >= this.maxSummaries) {
      entry = latest;
      clamp = true;
      this.clamped++;
    }
    if (entry === undefined) {
      entry = this.spare?.reused(tenantId, slot.dimension, slot.allowance, tally) ?? new Summary(tenantId, slot.dimension, slot.allowance, tally);
      // The rare counts only where there are any (a literal of one shape for the rest: no spread per summary).
      if (tally.shadowLimitedUnits > 0 || tally.shadowLimitedMessages > 0) {
        entry.shadowLimitedUnits = tally.shadowLimitedUnits;
        entry.shadowLimitedMessages = tally.shadowLimitedMessages;
      }
      if (tally.quotaRejectedUnits + tally.quotaRejectedMessages > 0) {
        entry.quotaRejectedUnits = tally.quotaRejectedUnits;
        entry.quotaRejectedMessages = tally.quotaRejectedMessages;
      }
      this.admissions.push(entry);
      if (latest !== undefined) {
        // The key's entry so far stays findable by its window.
        (this.earlierAdmissions ??= new Map()).set(`${allowance.tallyKey}\u0000${Math.floor(latest.fromSecond / this.windowSeconds)}`, latest);
      }
      allowance.batchSerial = this.serial;
      allowance.batchEntry = this.admissions.length - 1;
    } else {
      if (!clamp) widen(entry, tally.fromSecond, tally.toSecond);
      entry.admittedUnits += tally.admittedUnits;
      entry.admittedMessages += tally.admittedMessages;
      entry.shedUnits += tally.shedUnits;
      entry.shedMessages += tally.shedMessages;
      entry.rejectedUnits += tally.rejectedUnits;
      entry.rejectedMessages += tally.rejectedMessages;
      entry.unauthenticatedUnits = (entry.unauthenticatedUnits ?? 0) + tally.unauthenticatedUnits;
      entry.unauthenticatedMessages = (entry.unauthenticatedMessages ?? 0) + tally.unauthenticatedMessages;
      if (tally.shadowLimitedUnits > 0 || tally.shadowLimitedMessages > 0) {
        entry.shadowLimitedUnits = (entry.shadowLimitedUnits ?? 0) + tally.shadowLimitedUnits;
        entry.shadowLimitedMessages = (entry.shadowLimitedMessages ?? 0) + tally.shadowLimitedMessages;
      }
      if (tally.quotaRejectedUnits + tally.quotaRejectedMessages > 0) {
        entry.quotaRejectedUnits = (entry.quotaRejectedUnits ?? 0) + tally.quotaRejectedUnits;
        entry.quotaRejectedMessages = (entry.quotaRejectedMessages ?? 0) + tally.quotaRejectedMessages;
      }
      // A second counted in two tallies (a window handed off and counted again) is one hit second.
      entry.hitSeconds = Math.min(entry.hitSeconds + tally.hitSeconds, entry.seconds);
    }
    for (let cause = 0; cause < CAUSE_NAMES.length; cause++) {
      const messages = tally.unresolvedMessages[cause]!;
      if (messages === 0) continue;
      this.addUnresolved(tenantId, allowance, cause, tally, messages);
    }
  }

  private addUnresolved(tenantId: string, allowance: AllowanceState, cause: number, tally: Tally, messages: number): void {
    const keyOfKey = `${tenantId}\u0000${allowance.slot.dimension}\u0000${cause}`;
    const key = `${keyOfKey}\u0000${Math.floor(tally.fromSecond / this.windowSeconds)}`;
    const units = tally.unresolvedUnits[cause]!;
    let entry = this.unresolved.get(key);
    let clamp = false;
    if (entry === undefined && this.admissions.length + this.unresolved.size >= this.maxSummaries) {
      entry = this.latestUnresolved.get(keyOfKey);
      clamp = entry !== undefined;
    }
    if (entry === undefined) {
      entry = {
        tenantId,
        dimension: allowance.slot.dimension,
        cause: CAUSE_NAMES[cause]!,
        fromSecond: tally.fromSecond,
        seconds: tally.toSecond - tally.fromSecond + 1,
        units,
        messages,
      };
      this.unresolved.set(key, entry);
      this.latestUnresolved.set(keyOfKey, entry);
    } else {
      if (!clamp) widen(entry, tally.fromSecond, tally.toSecond);
      entry.units += units;
      entry.messages += messages;
    }
  }
}

function widen(entry: { fromSecond: number; seconds: number }, fromSecond: number, toSecond: number): void {
  const to = Math.max(entry.fromSecond + entry.seconds - 1, toSecond);
  entry.fromSecond = Math.min(entry.fromSecond, fromSecond);
  entry.seconds = to - entry.fromSecond + 1;
}

/**
 * A summary as a batch makes it. A class, not an object literal: V8 made each literal out of line (about 0.9 µs
 * each, most of a flush's collection at 10,000 active tenants) once the literal's boilerplate had seen a
 * second shape; a constructor's fields keep one shape, allocated inline. The rare counts are added only where
 * there are any, as before (absent means none).
 */
class Summary implements AdmissionSummary {
  tenantId!: string;
  dimension!: AdmissionSummary['dimension'];
  allowance!: AdmissionSummary['allowance'];
  fromSecond!: number;
  seconds!: number;
  admittedUnits!: number;
  admittedMessages!: number;
  shedUnits!: number;
  shedMessages!: number;
  rejectedUnits!: number;
  rejectedMessages!: number;
  unauthenticatedUnits!: number;
  unauthenticatedMessages!: number;
  hitSeconds!: number;
  declare shadowLimitedUnits?: number;
  declare shadowLimitedMessages?: number;
  declare quotaRejectedUnits?: number;
  declare quotaRejectedMessages?: number;

  constructor(tenantId: string, dimension: AdmissionSummary['dimension'], allowance: AdmissionSummary['allowance'], tally: Tally) {
    this.set(tenantId, dimension, allowance, tally);
  }

  /** Makes it the summary of `tally` (a new one, or a spare one made again: the same fields in the same order). */
  set(tenantId: string, dimension: AdmissionSummary['dimension'], allowance: AdmissionSummary['allowance'], tally: Tally): this {
    const seconds = tally.toSecond - tally.fromSecond + 1;
    this.tenantId = tenantId;
    this.dimension = dimension;
    this.allowance = allowance;
    this.fromSecond = tally.fromSecond;
    this.seconds = seconds;
    this.admittedUnits = tally.admittedUnits;
    this.admittedMessages = tally.admittedMessages;
    this.shedUnits = tally.shedUnits;
    this.shedMessages = tally.shedMessages;
    this.rejectedUnits = tally.rejectedUnits;
    this.rejectedMessages = tally.rejectedMessages;
    this.unauthenticatedUnits = tally.unauthenticatedUnits;
    this.unauthenticatedMessages = tally.unauthenticatedMessages;
    this.hitSeconds = Math.min(tally.hitSeconds, seconds);
    return this;
  }

  /** Without the rare counts: of the one shape every spare summary keeps. */
  get plain(): boolean {
    return this.shadowLimitedUnits === undefined && this.shadowLimitedMessages === undefined && this.quotaRejectedUnits === undefined && this.quotaRejectedMessages === undefined;
  }
}

/**
 * The summaries of batches a Recorder let go of (Recorder.released), for the next batches to make
 * again. It keeps at most as many as the latest batch it took had: a burst's batch is not kept for good.
 */
export class SpareSummaries {
  private readonly summaries: Summary[] = [];

  /** A spare summary made the summary of `tally`, or undefined when there is none. */
  reused(tenantId: string, dimension: AdmissionSummary['dimension'], allowance: AdmissionSummary['allowance'], tally: Tally): Summary | undefined {
    return this.summaries.pop()?.set(tenantId, dimension, allowance, tally);
  }

  /** Takes a released batch's summaries (only its own plain ones: a Recorder's callers may send others). */
  take(admissions: readonly AdmissionSummary[]): void {
    const summaries = this.summaries;
    if (summaries.length > admissions.length) summaries.length = admissions.length;
    for (let i = 0; i < admissions.length && summaries.length < admissions.length; i++) {
      const entry = admissions[i];
      if (entry instanceof Summary && entry.plain) summaries.push(entry);
    }
  }
}
