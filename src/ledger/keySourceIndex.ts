// The Recorder's side of summary references (catalog/summaryRefs.ts): where each key (tenant, dimension,
// allowance) it has stored this hour is listed, as (event id, row). Only events the ledger acknowledged are
// registered, so a reference always names a stored event; the index starts empty every UTC hour, and holds
// nothing within five minutes of a UTC midnight, so a reference and its source lie in the same day
// partition (and the same archive file) unless the database's clock is five minutes off the Recorder's.
import type { AdmissionSummary } from '../governance/index.ts';
import { fitsAdmissionFields } from './catalog/admissions.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const MIDNIGHT_MARGIN_MS = 5 * 60_000;

/** Keys the index holds at most (about 100 bytes each); past it, new keys are written out in full. */
const MAX_KEYS = 1_000_000;

/** The hour keys may be referred to in, or null near a UTC midnight (no references then). */
export function keyEpoch(nowMs: number): number | null {
  const ofDay = ((nowMs % DAY_MS) + DAY_MS) % DAY_MS;
  if (ofDay < MIDNIGHT_MARGIN_MS || ofDay >= DAY_MS - MIDNIGHT_MARGIN_MS) return null;
  return Math.floor(nowMs / HOUR_MS);
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

  /** Starts the index over when the hour changed (or a midnight is near); answers the epoch in force. */
  advance(nowMs: number): number | null {
    const epoch = keyEpoch(nowMs);
    if (epoch !== this.epoch) {
      this.places = new Map();
      this.keys = 0;
      this.epoch = epoch;
    }
    return epoch;
  }

  find(summary: AdmissionSummary): KeyPlace | undefined {
    if (this.epoch === null) return undefined;
    return keyIn(this.places.get(summary.tenantId), summary);
  }

  /** Registers the rows of a stored table event, planned in `epoch` (ignored when the hour changed since). */
  register(epoch: number | null, eventId: string, entries: readonly AdmissionSummary[]): void {
    if (epoch === null || epoch !== this.epoch || this.keys + entries.length > MAX_KEYS) return;
    for (let row = 0; row < entries.length; row++) {
      const entry = entries[row]!;
      const first = this.places.get(entry.tenantId);
      const known = keyIn(first, entry);
      if (known !== undefined) {
        known.eventId = eventId;
        known.row = row;
        continue;
      }
      // A new key goes first in its tenant's list.
      this.places.set(entry.tenantId, { dimension: entry.dimension, allowance: entry.allowance, eventId, row, next: first ?? null });
      this.keys++;
    }
  }
}

function keyIn(first: ListedKey | undefined, summary: AdmissionSummary): ListedKey | undefined {
  for (let key: ListedKey | null | undefined = first; key; key = key.next) if (key.dimension === summary.dimension && key.allowance === summary.allowance) return key;
  return undefined;
}
