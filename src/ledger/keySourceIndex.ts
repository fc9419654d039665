// The Recorder's side of summary references (catalog/summaryRefs.ts): where each key (tenant, dimension,
// allowance) it has stored within the last hour is listed, as (event id, row). Only events the ledger
// acknowledged are registered, so a reference always names a stored event. A listing is referred to for
// between half an hour and an hour (drawn per listing), then the key is listed again; the index starts empty
// every UTC day, and holds nothing near a UTC midnight of the database's clock (which stamps recorded_at and so
// picks the day partition), so a reference and its source lie in the same day partition (and the same archive
// file): from a minute before it (a reference planned then is recorded before it even if its append takes two
// query timeouts) to the moment it has surely passed, both widened by how far the Recorder's estimate of that
// clock may be off (storeClock.ts). Without an estimate, five minutes either side of the Recorder's own
// midnight, as before the estimate: that window wrote every summary in full for ten minutes a day, which at
// 20,000 and 50,000 active tenants broke the flush and stall bounds (bench/RESULTS.md, 2026-12-06).
// Listings expired all at once every UTC hour before: at 50,000 active tenants the hour's first flush wrote
// 51,000 summaries in full (3.5 MB, ~1 s of flush and the loop's slices behind it, 4.7 s when it
// fell in the service's catch-up after its start); drawn per listing, about 30 keys a second are listed again.
import type { AdmissionSummary } from '../governance/index.ts';
import { fitsAdmissionFields } from './catalog/admissions.ts';
import type { StoreTime } from './storeClock.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** A listing is referred to for an hour shortened by up to this share, drawn per listing. */
const LISTING_SPREAD = 0.5;
/** Either side of a midnight when the database's clock is not known: five minutes off the Recorder's is allowed for. */
const MIDNIGHT_MARGIN_MS = 5 * 60_000;
/** Before a midnight of the database's clock: two of the pool's query timeouts (src/db/postgres.ts, 30 s). */
const BEFORE_MIDNIGHT_MS = 60_000;

/** Keys the index holds at most (about 100 bytes each); past it, new keys are written out in full. */
const MAX_KEYS = 1_000_000;

/**
 * The UTC day (of the database's clock) keys may be referred to in, or null near a UTC midnight (no references
 * then). After a midnight the database's clock has passed it for sure once its estimate, less the estimate's
 * error, has: a source planned then is recorded in the new day, and so is every reference to it.
 */
export function keyEpoch(store: StoreTime): number | null {
  const before = store.errorMs === null ? MIDNIGHT_MARGIN_MS : BEFORE_MIDNIGHT_MS + store.errorMs;
  const after = store.errorMs === null ? MIDNIGHT_MARGIN_MS : store.errorMs;
  const ofDay = ((store.nowMs % DAY_MS) + DAY_MS) % DAY_MS;
  if (ofDay < after || ofDay >= DAY_MS - before) return null;
  return Math.floor(store.nowMs / DAY_MS);
}

/**
 * Whether a summary's counts can be written as a reference's columns: integers only. Every count field of
 * COUNT_FIELDS is read by name (test/unit/ledger/keySourceIndex.test.ts checks that each is): read through a
 * list of names, each read was a keyed look-up, and the Recorder checks every summary of every batch.
 */
export function hasIntegerCounts(summary: AdmissionSummary): boolean {
  return (
    isCount(summary.fromSecond) &&
    isCount(summary.seconds) &&
    isCount(summary.admittedUnits) &&
    isCount(summary.admittedMessages) &&
    isCount(summary.shedUnits) &&
    isCount(summary.shedMessages) &&
    isCount(summary.rejectedUnits) &&
    isCount(summary.rejectedMessages) &&
    isCount(summary.unauthenticatedUnits) &&
    isCount(summary.unauthenticatedMessages) &&
    isCount(summary.hitSeconds)
  );
}

/** An absent count (written as 0) or a safe integer. */
function isCount(value: unknown): boolean {
  return value === undefined || value === null || Number.isSafeInteger(value);
}

/**
 * Whether a summary can be written as a reference at all: its counts are integers, and it has none of the
 * shadow or quota counts (a reference carries ADMISSION_FIELDS' counts only, so such a summary is listed in
 * full: the table admissionFieldsFor would give it is not ADMISSION_FIELDS').
 */
export function isReferable(summary: AdmissionSummary): boolean {
  return fitsAdmissionFields(summary) && hasIntegerCounts(summary);
}

export interface KeyPlace {
  eventId: string;
  row: number;
}

/** A key of a tenant's, with where it is listed; the tenant's next key, if it has more than one. */
interface ListedKey extends KeyPlace {
  readonly dimension: AdmissionSummary['dimension'];
  readonly allowance: AdmissionSummary['allowance'];
  /** Until when the listing may be referred to (less than an hour after the event that lists it was planned). */
  expiresAtMs: number;
  next: ListedKey | null;
}

export class KeySourceIndex {
  /**
   * Each tenant's keys, by its tenant ID: a tenant has one key or a few (a dimension and allowance each, in a
   * list from its first), found by comparing them, so a look-up builds no key string (the Recorder looks up
   * every summary of every batch).
   */
  private places = new Map<string, ListedKey>();
  private keys = 0;
  epoch: number | null = null;
  /** The time of the latest advance: listings that expired by then are not found. */
  private nowMs = 0;

  /**
   * Starts the index over when the day changed (or a midnight is near); answers the epoch in force. `nowMs` is
   * the Recorder's clock (listings expire by it), `store` the database's as estimated (the day is its day); by
   * default not known.
   */
  advance(nowMs: number, store: StoreTime = { nowMs, errorMs: null }): number | null {
    const epoch = keyEpoch(store);
    this.nowMs = nowMs;
    if (epoch !== this.epoch) {
      this.places = new Map();
      this.keys = 0;
      this.epoch = epoch;
    }
    return epoch;
  }

  /** Where the summary's key is listed, if that listing may still be referred to (as of the latest advance). */
  find(summary: AdmissionSummary): KeyPlace | undefined {
    if (this.epoch === null) return undefined;
    const key = keyIn(this.places.get(summary.tenantId), summary);
    return key !== undefined && key.expiresAtMs > this.nowMs ? key : undefined;
  }

  /**
   * Registers the rows of a stored table event, planned at `plannedAtMs` in `epoch` (ignored when the day
   * changed since). Each listing may be referred to until a moment drawn between half an hour and an hour
   * after `plannedAtMs`: the event was stored after it was planned, so its references are less than an hour
   * younger than it.
   */
  register(epoch: number | null, eventId: string, entries: readonly AdmissionSummary[], plannedAtMs: number): void {
    if (epoch === null || epoch !== this.epoch || this.keys + entries.length > MAX_KEYS) return;
    for (let row = 0; row < entries.length; row++) {
      const entry = entries[row]!;
      const expiresAtMs = plannedAtMs + HOUR_MS * (1 - LISTING_SPREAD * Math.random());
      const first = this.places.get(entry.tenantId);
      const known = keyIn(first, entry);
      if (known !== undefined) {
        known.eventId = eventId;
        known.row = row;
        known.expiresAtMs = expiresAtMs;
        continue;
      }
      // A new key goes first in its tenant's list.
      this.places.set(entry.tenantId, { dimension: entry.dimension, allowance: entry.allowance, eventId, row, expiresAtMs, next: first ?? null });
      this.keys++;
    }
  }
}

function keyIn(first: ListedKey | undefined, summary: AdmissionSummary): ListedKey | undefined {
  for (let key: ListedKey | null | undefined = first; key; key = key.next) if (key.dimension === summary.dimension && key.allowance === summary.allowance) return key;
  return undefined;
}
