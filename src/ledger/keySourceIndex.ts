// The Recorder's side of summary references (catalog/summaryRefs.ts): where each key (tenant, dimension,
// allowance) it has stored this hour is listed, as (event id, row). Only events the ledger acknowledged are
// registered, so a reference always names a stored event; the index starts empty every UTC hour, and holds
// nothing within five minutes of a UTC midnight, so a reference and its source lie in the same day
// partition (and the same archive file) unless the database's clock is five minutes off the Recorder's.
import type { AdmissionSummary } from '../governance/index.ts';
import { COUNT_FIELDS } from './catalog/summaryRefs.ts';

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

/** A summary's key, as the index holds it (NUL never occurs in stored JSON, so it cannot occur in a key). */
export function summaryKey(summary: AdmissionSummary): string {
  return `${summary.tenantId}\u0000${summary.dimension}\u0000${summary.allowance === null ? '\u0001' : summary.allowance}`;
}

/** Whether a summary's counts can be written as a reference's columns: integers only. */
export function hasIntegerCounts(summary: AdmissionSummary): boolean {
  for (const field of COUNT_FIELDS) {
    const value = summary[field] ?? 0;
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) return false;
  }
  return true;
}

export interface KeyPlace {
  eventId: string;
  row: number;
}

export class KeySourceIndex {
  private places = new Map<string, KeyPlace>();
  epoch: number | null = null;

  /** Starts the index over when the hour changed (or a midnight is near); answers the epoch in force. */
  advance(nowMs: number): number | null {
    const epoch = keyEpoch(nowMs);
    if (epoch !== this.epoch) {
      this.places = new Map();
      this.epoch = epoch;
    }
    return epoch;
  }

  find(summary: AdmissionSummary): KeyPlace | undefined {
    return this.epoch === null ? undefined : this.places.get(summaryKey(summary));
  }

  /** Registers the rows of a stored table event, planned in `epoch` (ignored when the hour changed since). */
  register(epoch: number | null, eventId: string, entries: readonly AdmissionSummary[]): void {
    if (epoch === null || epoch !== this.epoch || this.places.size + entries.length > MAX_KEYS) return;
    entries.forEach((entry, row) => this.places.set(summaryKey(entry), { eventId, row }));
  }
}
