import type { Queryable } from '../../db/db.ts';
import { WrongExpectedRevision, type AppendResult, type ExpectedRevision } from '../eventStore.ts';
import { LEDGER_CHANNEL_SQL } from './ledgerChannel.ts';
import type { PreparedBatch } from './prepareBatch.ts';

interface AppendRow {
  head: bigint | null;
  allowed: boolean;
  fresh_count: bigint;
  last_revision: bigint | null;
  last_commit: bigint | null;
  last_prepare: bigint | null;
}

// One statement for the whole batch. It finds the stream's head and the batch's already-stored ids, checks
// the expected revision, inserts only new events (when the check passes) with revisions following the head,
// and notifies subscribers. `known` probes the event_id index with = ANY, so its cost follows the batch,
// never the size of the ledger; with $8 false it is skipped (see appendBatch). NOTIFY inside the transaction is delivered only at commit, so a woken reader
// finds the events. The final SELECT names `notified` because PostgreSQL skips unreferenced SELECT CTEs.
const APPEND_SQL = `
WITH batch AS (
  SELECT b.event_id, b.type, b.data, b.metadata, b.n
  FROM unnest($2::uuid[], $3::text[], $4::jsonb[], $5::jsonb[]) WITH ORDINALITY AS b(event_id, type, data, metadata, n)
),
head AS (SELECT max(revision) AS revision FROM gl_events WHERE stream = $1),
known AS (
  SELECT g.revision, g.tx_id, g.global_position, batch.n
  FROM gl_events g JOIN batch ON g.event_id = batch.event_id
  WHERE $8::boolean AND g.event_id = ANY($2::uuid[])
),
fresh AS (
  SELECT batch.*, row_number() OVER (ORDER BY batch.n) AS k
  FROM batch
  WHERE NOT EXISTS (SELECT 1 FROM known WHERE known.n = batch.n)
),
allowed AS (
  SELECT CASE $6::text
    WHEN 'any' THEN true
    WHEN 'no_stream' THEN head.revision IS NULL
    WHEN 'stream_exists' THEN head.revision IS NOT NULL
    ELSE head.revision IS NOT DISTINCT FROM $7::bigint
  END AS ok
  FROM head
),
inserted AS (
  INSERT INTO gl_events (event_id, stream, revision, type, data, metadata)
  SELECT fresh.event_id, $1, coalesce(head.revision, -1) + fresh.k, fresh.type, fresh.data, fresh.metadata
  FROM fresh, head, allowed
  WHERE allowed.ok
  ORDER BY fresh.k
  RETURNING revision, tx_id, global_position
),
notified AS (
  SELECT pg_notify(${LEDGER_CHANNEL_SQL}, '') FROM (SELECT 1 FROM inserted LIMIT 1) AS any_inserted
),
last_event AS (
  SELECT revision, tx_id, global_position FROM (
    (SELECT revision, tx_id, global_position, 1 AS pick FROM inserted ORDER BY global_position DESC LIMIT 1)
    UNION ALL
    (SELECT revision, tx_id, global_position, 2 AS pick FROM known ORDER BY n DESC LIMIT 1)
  ) AS candidates ORDER BY pick LIMIT 1
)
SELECT head.revision AS head, allowed.ok AS allowed,
  (SELECT count(*) FROM fresh) AS fresh_count,
  (SELECT revision FROM last_event) AS last_revision,
  (SELECT tx_id FROM last_event) AS last_commit,
  (SELECT global_position FROM last_event) AS last_prepare,
  (SELECT count(*) FROM notified) AS notifications
FROM head, allowed`;

/**
 * Runs the append statement once. It does not lock: alone (autocommit) it relies on UNIQUE (stream,
 * revision), and a writer that raced it fails with a unique violation (23505) and must try again; after
 * the stream lock (appendInTransaction) it cannot lose that race to another locked writer.
 * Throws WrongExpectedRevision when the check fails; nothing is stored then.
 *
 * `lookUpStoredIds` false skips the search for already-stored ids: a stored id then makes the insert
 * fail with a unique violation instead of being skipped, so only a caller that retries with the look-up
 * on that error (appendToStream's first attempt) may pass false. It saves a second probe of the event_id
 * index per event on the common path, where every id is new.
 */
export async function appendBatch(
  db: Queryable,
  stream: string,
  batch: PreparedBatch,
  expected: ExpectedRevision,
  lookUpStoredIds = true,
): Promise<AppendResult> {
  const { rows } = await db.query<AppendRow>(APPEND_SQL, [
    stream,
    batch.ids,
    batch.types,
    batch.data,
    batch.metadata,
    typeof expected === 'bigint' ? 'revision' : expected,
    typeof expected === 'bigint' ? expected.toString() : null,
    lookUpStoredIds,
  ]);
  const row = rows[0]!;
  if (!row.allowed && row.fresh_count > 0n) throw new WrongExpectedRevision(stream, expected, row.head ?? 'no_stream');
  return {
    nextRevision: row.last_revision!,
    position: { commit: row.last_commit!, prepare: row.last_prepare! },
  };
}
