import type { Queryable } from '../../db/db.ts';
import { SUMMARY_STREAM } from './summaryPartitions.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The data of an admission summary event by its id (the source of a reference, catalog/summaryRefs.ts), or
 * undefined when the ledger's database does not hold it (archived, or another ledger). Only the summaries'
 * partitions are searched, each by its event_id index. An id that is no uuid is looked for nowhere: a
 * failing statement would abort the caller's transaction.
 */
export async function lookUpSummaryEvent(db: Queryable, eventId: string): Promise<unknown> {
  if (!UUID.test(eventId)) return undefined;
  const { rows } = await db.query<{ data: unknown }>('SELECT data FROM gl_events WHERE stream = $1 AND event_id = $2::uuid LIMIT 1', [SUMMARY_STREAM, eventId]);
  return rows[0]?.data;
}
