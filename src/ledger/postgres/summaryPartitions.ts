// The admission summaries' day partitions (migration 0100_ledger_summary_partitions.sql): which stream is
// partitioned by time, making the partitions of coming days, and listing the ones that exist.
import type { Queryable } from '../../db/db.ts';
import { ADMISSIONS_STREAM } from '../catalog/admissions.ts';

/** The one stream kept in day partitions; every other stream is kept for good in gl_events_kept. */
export const SUMMARY_STREAM = ADMISSIONS_STREAM;

/** The event types of SUMMARY_STREAM: a projection that reads them reads what archiving removes. */
export const SUMMARY_EVENT_TYPES: readonly string[] = ['AdmissionsRecorded', 'UnresolvedAdmissionsRecorded'];

export function isTimePartitioned(stream: string): boolean {
  return stream === SUMMARY_STREAM;
}

/** Partitions are made this many days ahead, so an outage of the maintenance timer shorter than that costs nothing. */
export const DAYS_AHEAD = 7;

const DAY_MS = 86_400_000;
const PARTITION_NAME = /^gl_events_summaries_(\d{4})(\d{2})(\d{2})$/;

/** A UTC day as `YYYY-MM-DD`. */
export type Day = string;

export function dayOf(ms: number): Day {
  return new Date(ms).toISOString().slice(0, 10);
}

export function addDays(day: Day, days: number): Day {
  return dayOf(dayStart(day) + days * DAY_MS);
}

/** Midnight UTC starting `day`, in ms. */
export function dayStart(day: Day): number {
  return Date.parse(`${day}T00:00:00Z`);
}

export function isDay(text: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(text) && !Number.isNaN(dayStart(text)) && dayOf(dayStart(text)) === text;
}

export interface SummaryPartition {
  table: string;
  day: Day;
}

/**
 * Makes the partitions of today and the next `daysAhead` days (UTC) that do not exist yet; returns the days
 * it made. One statement per day: each takes the partition lock for an instant only.
 */
export async function ensureSummaryPartitions(db: Queryable, { now = Date.now(), daysAhead = DAYS_AHEAD } = {}): Promise<Day[]> {
  const made: Day[] = [];
  const today = dayOf(now);
  for (let ahead = 0; ahead <= daysAhead; ahead++) {
    const day = addDays(today, ahead);
    const { rows } = await db.query<{ made: boolean }>('SELECT gl_create_summary_partition($1::date) AS made', [day]);
    if (rows[0]?.made) made.push(day);
  }
  return made;
}

/** The day partitions attached now, oldest first (the default partition is not one of them). */
export async function listSummaryPartitions(db: Queryable): Promise<SummaryPartition[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'gl_events_summaries'::regclass`,
  );
  const partitions: SummaryPartition[] = [];
  for (const { name } of rows) {
    const match = PARTITION_NAME.exec(name);
    if (match) partitions.push({ table: name, day: `${match[1]}-${match[2]}-${match[3]}` });
  }
  return partitions.sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0));
}

/** How many summaries went to the default partition (a day that had no partition in time); kept for good. */
export async function countUnpartitionedSummaries(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM gl_events_summaries_default');
  return Number(rows[0]!.n);
}
