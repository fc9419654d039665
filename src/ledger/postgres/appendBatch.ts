import type { Queryable } from '../../db/db.ts';
import { prepared } from '../../db/preparedStatements.ts';
import { WrongExpectedRevision, type AppendResult, type ExpectedRevision } from '../eventStore.ts';
import { LEDGER_CHANNEL_SQL } from './appendSignal.ts';
import type { PreparedBatch } from './prepareBatch.ts';

/** One stream's part of an append statement. */
export interface PreparedAppend {
  stream: string;
  batch: PreparedBatch;
  expected: ExpectedRevision;
}

interface AppendRow {
  head: bigint | null;
  allowed: boolean;
  fresh_count: bigint;
  last_revision: bigint | null;
  last_commit: bigint | null;
  last_prepare: bigint | null;
}

interface StreamsRow {
  i: bigint | null;
  head: bigint | null;
  ok: boolean | null;
  stream: string | null;
  event_id: string | null;
  revision: bigint | null;
  tx_id: bigint | null;
  global_position: bigint | null;
}

// One statement for the whole batch. It finds the stream's head and the batch's already-stored ids, checks
// the expected revision, inserts only new events (when the check passes) with revisions following the head,
// and notifies subscribers. The batch arrives as one jsonb array (batchJson). `known` probes the event_id
// index per batch event, so its cost follows the batch, never the size of the ledger; with $5 false it is
// skipped (see appendBatch). NOTIFY inside the transaction
// is delivered only at commit, so a woken reader finds the events. The final SELECT names `notified` because PostgreSQL skips unreferenced SELECT CTEs.
// migrations/0220_ledger_locked_append.sql (gl_append_locked) runs the same statement after the stream's lock:
// a change here is made there too, in a new migration.
const APPEND_SQL = prepared(`
WITH batch AS (
  SELECT (b.e->>'i')::uuid AS event_id, b.e->>'t' AS type, b.e->'d' AS data, b.e->'m' AS metadata, b.n
  FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS b(e, n)
),
head AS (SELECT max(revision) AS revision FROM gl_events WHERE stream = $1),
known AS (
  SELECT g.revision, g.tx_id, g.global_position, batch.n
  FROM gl_events g JOIN batch ON g.event_id = batch.event_id
  WHERE $5::boolean AND g.event_id = ANY(ARRAY(SELECT event_id FROM batch))
),
fresh AS (
  SELECT batch.*, row_number() OVER (ORDER BY batch.n) AS k
  FROM batch
  WHERE NOT EXISTS (SELECT 1 FROM known WHERE known.n = batch.n)
),
allowed AS (
  SELECT CASE $3::text
    WHEN 'any' THEN true
    WHEN 'no_stream' THEN head.revision IS NULL
    WHEN 'stream_exists' THEN head.revision IS NOT NULL
    ELSE head.revision IS NOT DISTINCT FROM $4::bigint
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
FROM head, allowed`);

// One statement for several streams (appendStreamsInTransaction). `streams` has a row per stream (i: its place in
// the call) with its head and whether its expected revision holds; `batch` has a row per event (n: its place
// in the whole call, i: its stream). The statement finds the events' already-stored ids (`known`), inserts
// only new events with revisions following each stream's head, in call order, when every stream's check
// holds or concerns only stored events (a stream whose events are all stored is an idempotent retry,
// whatever it expected), and notifies subscribers once. One refused stream stores nothing for any. It
// answers a row per stream (i set), a row per already-stored event of the call (event_id set) and a row
// per stream it inserted into (stream set) with that stream's last new event: within a stream, revisions
// and positions grow together, in batch order. appendBatches makes the per-stream results of them. `known`
// probes the event_id index with = ANY, so its cost follows the batch, never the size of the ledger. NOTIFY
// inside the transaction is delivered only at commit, so a woken reader finds the events. The final SELECT names
// `notified` because PostgreSQL skips unreferenced SELECT CTEs. The shape (a LATERAL head, no CTE between
// `streams` and the insert, the results put together in TypeScript) keeps its planning, most of the cost of a
// small append, low; still, for one stream it costs ~0.03 ms more to plan than APPEND_SQL, which measured
// 8-15% of small appends' throughput. Every single-stream append (the port's appendToStream, the Recorder,
// the control plane) therefore keeps APPEND_SQL; appendBatches uses it when given one stream.
const APPEND_STREAMS_SQL = prepared(`
WITH streams AS (
  SELECT s.i, s.stream, h.head,
    CASE s.kind
      WHEN 'any' THEN true
      WHEN 'no_stream' THEN h.head IS NULL
      WHEN 'stream_exists' THEN h.head IS NOT NULL
      ELSE h.head IS NOT DISTINCT FROM s.revision
    END AS ok
  FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS s(stream, kind, revision, i),
    LATERAL (SELECT max(g.revision) AS head FROM gl_events g WHERE g.stream = s.stream) AS h
),
batch AS (
  SELECT b.i, b.event_id, b.type, b.data, b.metadata, b.n
  FROM unnest($4::int[], $5::uuid[], $6::text[], $7::jsonb[], $8::jsonb[]) WITH ORDINALITY AS b(i, event_id, type, data, metadata, n)
),
known AS (
  SELECT g.event_id, g.revision, g.tx_id, g.global_position
  FROM gl_events g
  WHERE g.event_id = ANY($5::uuid[])
),
fresh AS (
  SELECT batch.*, row_number() OVER (PARTITION BY batch.i ORDER BY batch.n) AS k
  FROM batch
  WHERE NOT EXISTS (SELECT 1 FROM known WHERE known.event_id = batch.event_id)
),
inserted AS (
  INSERT INTO gl_events (event_id, stream, revision, type, data, metadata)
  SELECT fresh.event_id, streams.stream, coalesce(streams.head, -1) + fresh.k, fresh.type, fresh.data, fresh.metadata
  FROM fresh JOIN streams ON streams.i = fresh.i
  WHERE NOT EXISTS (SELECT 1 FROM fresh AS f JOIN streams AS s ON s.i = f.i WHERE NOT s.ok)
  ORDER BY fresh.n
  RETURNING stream, revision, tx_id, global_position
),
notified AS (
  SELECT pg_notify(${LEDGER_CHANNEL_SQL}, '') FROM (SELECT 1 FROM inserted LIMIT 1) AS any_inserted
)
SELECT streams.i, streams.head, streams.ok, NULL::text AS stream, NULL::uuid AS event_id, NULL::bigint AS revision,
  NULL::xid8 AS tx_id, NULL::bigint AS global_position, (SELECT count(*) FROM notified) AS notifications
FROM streams
UNION ALL SELECT NULL, NULL, NULL, NULL, event_id, revision, tx_id, global_position, NULL FROM known
UNION ALL SELECT NULL, NULL, NULL, stream, NULL, max(revision), tx_id, max(global_position), NULL FROM inserted GROUP BY stream, tx_id`);

/**
 * Runs the append statement once for several distinct streams (the caller checks that they are distinct
 * and that no event id appears twice in the call); returns one result per stream, in the given order.
 * It does not lock: alone (autocommit) it relies on UNIQUE (stream, revision), and a writer that raced it
 * fails with a unique violation (23505) and must try again; after the streams' locks (appendLocked) it
 * cannot lose that race to another locked writer. Throws WrongExpectedRevision, naming the first stream
 * (in the given order) whose check failed; nothing is stored for any stream then.
 */
export async function appendBatches(db: Queryable, appends: readonly PreparedAppend[]): Promise<AppendResult[]> {
  if (appends.length === 1) {
    const [only] = appends as [PreparedAppend];
    return [await appendBatch(db, only.stream, only.batch, only.expected)];
  }
  const eventStream: number[] = [];
  const ids: string[] = [];
  const types: string[] = [];
  const data: string[] = [];
  const metadata: string[] = [];
  appends.forEach(({ batch }, s) => {
    for (let e = 0; e < batch.ids.length; e++) {
      eventStream.push(s + 1);
      ids.push(batch.ids[e]!);
      types.push(batch.types[e]!);
      data.push(batch.data[e]!);
      metadata.push(batch.metadata[e]!);
    }
  });
  const { rows } = await db.query<StreamsRow>(APPEND_STREAMS_SQL, [
    appends.map((each) => each.stream),
    appends.map(({ expected }) => (typeof expected === 'bigint' ? 'revision' : expected)),
    appends.map(({ expected }) => (typeof expected === 'bigint' ? expected.toString() : null)),
    eventStream,
    ids,
    types,
    data,
    metadata,
  ]);
  const streamRows: StreamsRow[] = [];
  const known = new Map<string, StreamsRow>();
  const lastInserted = new Map<string, StreamsRow>();
  for (const row of rows) {
    if (row.i !== null) streamRows[Number(row.i) - 1] = row;
    else if (row.event_id !== null) known.set(row.event_id, row);
    else lastInserted.set(row.stream!, row);
  }
  appends.forEach(({ stream, batch, expected }, s) => {
    const { head, ok } = streamRows[s]!;
    if (!ok && batch.ids.some((id) => !known.has(id))) throw new WrongExpectedRevision(stream, expected, head ?? 'no_stream');
  });
  // Per stream: the last event this statement stored, else the stored copy of the batch's last event
  // (every event of the batch was stored before).
  return appends.map(({ stream, batch }) => {
    const last = lastInserted.get(stream) ?? known.get(batch.ids[batch.ids.length - 1]!)!;
    return { nextRevision: last.revision!, position: { commit: last.tx_id!, prepare: last.global_position! } };
  });
}

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
    batchJson(batch),
    typeof expected === 'bigint' ? 'revision' : expected,
    typeof expected === 'bigint' ? expected.toString() : null,
    lookUpStoredIds,
  ]);
  return appendResult(stream, expected, rows[0]!);
}

// APPEND_SQL after the stream's lock, in one statement (migration 0220_ledger_locked_append.sql says why).
const LOCKED_APPEND_SQL = prepared(`
SELECT o_head AS head, o_allowed AS allowed, o_fresh_count AS fresh_count, o_last_revision AS last_revision,
  o_last_commit AS last_commit, o_last_prepare AS last_prepare
FROM gl_append_locked($1, $2::jsonb, $3, $4::bigint)`);

/**
 * Takes the stream's lock and appends, in one statement that is its own transaction: what appendLocked does
 * in a transaction of four round trips (BEGIN, the lock, the append, COMMIT), in one. `db` must not be in a
 * transaction (the lock would be held to its end). Stored ids are looked up, as after appendLocked's lock.
 * Throws WrongExpectedRevision when the check fails; nothing is stored then.
 */
export async function appendLockedAlone(db: Queryable, stream: string, batch: PreparedBatch, expected: ExpectedRevision): Promise<AppendResult> {
  const { rows } = await db.query<AppendRow>(LOCKED_APPEND_SQL, [
    stream,
    batchJson(batch),
    typeof expected === 'bigint' ? 'revision' : expected,
    typeof expected === 'bigint' ? expected.toString() : null,
  ]);
  return appendResult(stream, expected, rows[0]!);
}

function appendResult(stream: string, expected: ExpectedRevision, row: AppendRow): AppendResult {
  if (!row.allowed && row.fresh_count > 0n) throw new WrongExpectedRevision(stream, expected, row.head ?? 'no_stream');
  return {
    nextRevision: row.last_revision!,
    position: { commit: row.last_commit!, prepare: row.last_prepare! },
  };
}

/**
 * The batch as ONE jsonb parameter: `[{"i":id,"t":type,"d":data,"m":metadata}, ...]`, put together from the
 * JSON texts prepareBatch made, so nothing is serialized twice. Sent as arrays instead (uuid[], text[],
 * jsonb[]), the driver escapes every element into an array literal (a backslash before each quote of each
 * JSON text): ~45 ms of the event loop per 1,000 summary entries, the largest part of a flush's cost.
 */
export function batchJson(batch: PreparedBatch): string {
  const parts: string[] = [];
  for (let i = 0; i < batch.ids.length; i++) {
    parts.push(`{"i":"${batch.ids[i]!}","t":${JSON.stringify(batch.types[i]!)},"d":${batch.data[i]!},"m":${batch.metadata[i]!}}`);
  }
  return `[${parts.join(',')}]`;
}
