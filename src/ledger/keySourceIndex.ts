// The Recorder's side of summary references (catalog/summaryRefs.ts): where each key (tenant, dimension,
// allowance) it has stored within the last hour is listed, as (event id, row). Only events the ledger
// acknowledged are registered, so a reference always names a stored event. A listing is referred to for
// between half an hour and an hour (drawn per listing), then the key is listed again. A reference and its
// source must lie in one UTC day of the database's clock (which stamps recorded_at and so picks the day
// partition and the archive file): the database refuses a reference recorded in another day than its source
// (migrations/0250_ledger_summary_refs_same_day.sql), and the Recorder then forgets every listing (`forget`) and
// writes the batch in full: once a day, when the database's midnight has passed, whatever the clocks say.
// Before, the index kept off midnights by estimated margins and wrote every summary in full within them: five
// minutes either side of the Recorder's midnight broke the flush and stall bounds at 20,000 and 50,000 active
// tenants (bench/RESULTS.md, 2026-12-06), and a minute with the database's clock estimated still wrote about 62
// flushes a day in full.
// Listings expired all at once every UTC hour before: at 50,000 active tenants the hour's first flush wrote
// 51,000 summaries in full (3.5 MB, ~1 s of flush and the loop's slices behind it, 4.7 s when it
// fell in the service's catch-up after its start); drawn per listing, about 30 keys a second are listed again.
import type { AdmissionSummary } from '../governance/index.ts';
import { fitsAdmissionFields } from './catalog/admissions.ts';

const HOUR_MS = 3_600_000;
/** A listing is referred to for an hour shortened by up to this share, drawn per listing. */
const LISTING_SPREAD = 0.5;

/** Keys the index holds at most (about 100 bytes each); past it, it starts over. */
const MAX_KEYS = 1_000_000;

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
  /** Counts the times the index was forgotten: events planned before that are not registered. */
  private generation = 0;
  /** The time of the latest advance: listings that expired by then are not found. */
  private nowMs = 0;

  /** Sets the time listings expire by (the Recorder's clock, when it plans a batch); answers the generation in force. */
  advance(nowMs: number): number {
    this.nowMs = nowMs;
    return this.generation;
  }

  /**
   * Forgets every listing: the ledger refused a reference to one (a midnight of its clock passed since it was
   * stored), and every listing is of the day before. Events planned before are not registered after it.
   */
  forget(): void {
    this.clear();
    this.generation++;
  }

  /** Drops every listing (their keys are written in full once more). */
  private clear(): void {
    this.places = new Map();
    this.keys = 0;
  }

  /** Where the summary's key is listed, if that listing may still be referred to (as of the latest advance). */
  find(summary: AdmissionSummary): KeyPlace | undefined {
    const key = keyIn(this.places.get(summary.tenantId), summary);
    return key !== undefined && key.expiresAtMs > this.nowMs ? key : undefined;
  }

  /**
   * Registers the rows of a stored table event, planned at `plannedAtMs` in `generation` (ignored when the
   * index was forgotten since). Each listing may be referred to until a moment drawn between half an hour and
   * an hour after `plannedAtMs`: the event was stored after it was planned, so its references are less than an
   * hour younger than it.
   */
  register(generation: number, eventId: string, entries: readonly AdmissionSummary[], plannedAtMs: number): void {
    if (generation !== this.generation) return;
    // Keys of tenants gone quiet stay until a midnight's refusal forgets them; past the bound, the index
    // starts over (its keys are written in full once more).
    if (this.keys + entries.length > MAX_KEYS) this.clear();
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
