// Reading the PostgreSQL ledger: the row every read selects and how it becomes a RecordedEvent, one stream in
// revision order, the global order below every open transaction (readAll), the head, and whether events wait
// unread after a checkpoint.
import { laterCheckpoint } from '../eventStore.ts';
import type { Checkpoint, EventMetadata, Position, ReadAllPage, ReadStreamOptions, RecordedEvent } from '../eventStore.ts';
import type { Queryable } from '../../db/db.ts';

/** The columns every read selects, and how a row becomes a RecordedEvent. */
export const EVENT_COLUMNS = 'global_position, tx_id, event_id, stream, revision, type, data, metadata, recorded_at';

export interface EventRow {
  global_position: bigint;
  tx_id: bigint;
  event_id: string;
  stream: string;
  revision: bigint;
  type: string;
  data: unknown;
  /** Selected instead of `data` by a read with ReadAllOptions.dataAsJson. */
  data_json?: string;
  metadata: EventMetadata;
  recorded_at: Date;
}

export function toRecordedEvent(row: EventRow): RecordedEvent {
  const event: RecordedEvent = {
    id: row.event_id,
    stream: row.stream,
    revision: row.revision,
    position: { commit: row.tx_id, prepare: row.global_position },
    type: row.type,
    data: row.data,
    metadata: row.metadata,
    recordedAt: row.recorded_at,
  };
  if (row.data_json !== undefined) event.dataJson = row.data_json;
  return event;
}

/**
 * Events of one stream in revision order. Forwards starts at `fromRevision` (default the start), backwards
 * at `fromRevision` (default the end), both inclusive; an absent stream reads as empty. Revisions within a
 * stream are assigned under the stream's lock, so committed revisions have no gaps and need no snapshot
 * filtering.
 */
export async function readStream(db: Queryable, stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
  const direction = options.direction ?? 'forwards';
  const from = options.fromRevision ?? (direction === 'forwards' ? 'start' : 'end');
  const maxCount = options.maxCount ?? null;
  if (maxCount !== null && (!Number.isInteger(maxCount) || maxCount < 0)) {
    throw new RangeError(`maxCount must be a whole number >= 0, got ${maxCount}`);
  }
  // Forwards from the end, or backwards from the start, is past the last event by definition.
  if ((direction === 'forwards' && from === 'end') || (direction === 'backwards' && from === 'start')) return [];
  const bound = typeof from === 'bigint' ? from.toString() : null;
  const sql =
    direction === 'forwards'
      ? `SELECT ${EVENT_COLUMNS} FROM gl_events WHERE stream = $1 AND ($2::bigint IS NULL OR revision >= $2::bigint)
         ORDER BY revision LIMIT $3`
      : `SELECT ${EVENT_COLUMNS} FROM gl_events WHERE stream = $1 AND ($2::bigint IS NULL OR revision <= $2::bigint)
         ORDER BY revision DESC LIMIT $3`;
  const { rows } = await db.query<EventRow>(sql, [stream, bound, maxCount]);
  return rows.map(toRecordedEvent);
}

// Why not simply ORDER BY global_position: the bigserial is drawn when a row is inserted, not when its
// transaction commits. Transaction A draws 10, B draws 11, B commits first; a reader that then reads 11
// and checkpoints there never sees 10 when A commits: the event is skipped forever (the sequence-gap
// problem). So we order by the appending transaction's id first, and return only rows whose transaction
// id is below the snapshot's xmin: every transaction below xmin has finished, and any transaction that
// commits later has an id >= xmin, so it can only add rows after everything returned here. A reader is
// held back (never wrong) while an older transaction stays open.
const READABLE = 'tx_id < pg_snapshot_xmin(pg_current_snapshot())';

// Every type: the global order index from the checkpoint.
const ALL_TYPES_SQL = `
SELECT ${EVENT_COLUMNS} FROM gl_events
WHERE (tx_id, global_position) > ($1::xid8, $2::bigint) AND ${READABLE}
ORDER BY tx_id, global_position
LIMIT $3`;

// Some types: one range of the (type, tx_id, global_position) index per type, each from the checkpoint,
// merged. `type = ANY(...)` over the global order index would instead wade through every event of other
// types (an admission summary stream dwarfs the control plane's), and a bitmap scan would sort them all.
const SOME_TYPES_SQL = `
SELECT e.* FROM unnest($4::text[]) AS t(type)
CROSS JOIN LATERAL (
  SELECT ${EVENT_COLUMNS} FROM gl_events g
  WHERE g.type = t.type AND (g.tx_id, g.global_position) > ($1::xid8, $2::bigint) AND ${READABLE}
  ORDER BY g.tx_id, g.global_position
  LIMIT $3
) AS e
ORDER BY e.tx_id, e.global_position
LIMIT $3`;

// The page and, in the same snapshot, the last readable event of any type (the readable head): a page
// shorter than asked holds every readable event of its types, and every later commit sorts after that head.
const pageSql = (events: string) => `
SELECT h.tx_id AS head_tx_id, h.global_position AS head_global_position, p.*
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (
  SELECT tx_id, global_position FROM gl_events WHERE ${READABLE}
  ORDER BY tx_id DESC, global_position DESC
  LIMIT 1
) AS h ON true
LEFT JOIN LATERAL (${events}) AS p ON true
ORDER BY p.tx_id, p.global_position`;

const ALL_TYPES_PAGE_SQL = pageSql(ALL_TYPES_SQL);
const SOME_TYPES_PAGE_SQL = pageSql(SOME_TYPES_SQL);
// The same pages with the data as JSON text (ReadAllOptions.dataAsJson), in the column data_json.
const dataAsJson = (sql: string) => sql.replaceAll(EVENT_COLUMNS, EVENT_COLUMNS.replace(' data,', ' NULL::jsonb AS data, data::text AS data_json,'));
const ALL_TYPES_PAGE_JSON_SQL = dataAsJson(ALL_TYPES_PAGE_SQL);
const SOME_TYPES_PAGE_JSON_SQL = dataAsJson(SOME_TYPES_PAGE_SQL);

// The first committed event after the checkpoint, readable or still held back: no xmin bound here.
const FIRST_PENDING_ALL_SQL = `
SELECT ${EVENT_COLUMNS} FROM gl_events
WHERE (tx_id, global_position) > ($1::xid8, $2::bigint)
ORDER BY tx_id, global_position
LIMIT 1`;

const FIRST_PENDING_SOME_SQL = `
SELECT e.* FROM unnest($3::text[]) AS t(type)
CROSS JOIN LATERAL (
  SELECT ${EVENT_COLUMNS} FROM gl_events g
  WHERE g.type = t.type AND (g.tx_id, g.global_position) > ($1::xid8, $2::bigint)
  ORDER BY g.tx_id, g.global_position
  LIMIT 1
) AS e
ORDER BY e.tx_id, e.global_position
LIMIT 1`;

interface PageRow extends EventRow {
  head_tx_id: bigint | null;
  head_global_position: bigint | null;
}

/** Up to maxCount events after `after` in the global order (tx_id, global_position), optionally only of some types. */
export async function readAll(db: Queryable, after: Checkpoint, maxCount: number, types?: readonly string[]): Promise<RecordedEvent[]> {
  checkMaxCount(maxCount);
  const { rows } = await db.query<EventRow>(types ? SOME_TYPES_SQL : ALL_TYPES_SQL, [...positionParams(after), maxCount, ...typeParams(types)]);
  return rows.map(toRecordedEvent);
}

/** readAll, and the readable head it reached (see ReadAllPage.through), in one statement. */
export async function readAllPage(db: Queryable, after: Checkpoint, maxCount: number, types?: readonly string[], dataAsJson = false): Promise<ReadAllPage> {
  checkMaxCount(maxCount);
  const sql = dataAsJson ? (types ? SOME_TYPES_PAGE_JSON_SQL : ALL_TYPES_PAGE_JSON_SQL) : types ? SOME_TYPES_PAGE_SQL : ALL_TYPES_PAGE_SQL;
  const { rows } = await db.query<PageRow>(sql, [
    ...positionParams(after),
    maxCount,
    ...typeParams(types),
  ]);
  const events = rows.filter((row) => row.event_id !== null).map(toRecordedEvent);
  const last = events.at(-1);
  if (events.length === maxCount && last) return { events, through: last.position };
  const head = rows[0];
  let through: Checkpoint = laterCheckpoint(after, last?.position ?? 'start');
  if (head && head.head_tx_id !== null && head.head_global_position !== null) {
    through = laterCheckpoint(through, { commit: BigInt(head.head_tx_id), prepare: BigInt(head.head_global_position) });
  }
  return { events, through };
}

export async function firstPending(db: Queryable, after: Checkpoint, types?: readonly string[]): Promise<RecordedEvent | undefined> {
  const { rows } = await db.query<EventRow>(types ? FIRST_PENDING_SOME_SQL : FIRST_PENDING_ALL_SQL, [
    ...positionParams(after),
    ...typeParams(types),
  ]);
  return rows[0] ? toRecordedEvent(rows[0]) : undefined;
}

function checkMaxCount(maxCount: number) {
  if (!Number.isInteger(maxCount) || maxCount < 0) throw new RangeError(`maxCount must be a whole number >= 0, got ${maxCount}`);
}

// Sent as text: no 64-bit value passes through a JavaScript number.
function positionParams(after: Checkpoint): [string, string] {
  return after === 'start' ? ['0', '0'] : [after.commit.toString(), after.prepare.toString()];
}

function typeParams(types: readonly string[] | undefined): [string[]] | [] {
  return types ? [[...types]] : [];
}

/**
 * The greatest (tx_id, global_position) among committed events. Not limited to below the snapshot's xmin
 * like readAll: a transaction still open has no rows here yet, and anything committed later that sorts
 * before this head (an older transaction) is read before the head is, so a reader that reaches the head
 * has seen every event committed before this call.
 */
export async function readHeadPosition(db: Queryable): Promise<Position | undefined> {
  const { rows } = await db.query<{ tx_id: bigint; global_position: bigint }>(
    'SELECT tx_id, global_position FROM gl_events ORDER BY tx_id DESC, global_position DESC LIMIT 1',
  );
  const head = rows[0];
  return head ? { commit: head.tx_id, prepare: head.global_position } : undefined;
}

/**
 * True when committed events (of `types`, if given) exist after `after`. A subscriber asks this after a
 * short readAll page: such events are either held back behind an older open transaction, whose end sends
 * no NOTIFY if it appended nothing, or became readable since that page, so it must read again soon
 * rather than sleep until the next NOTIFY.
 *
 * It deliberately does not ask "held back right now": that would be a second snapshot, and an older
 * transaction that ends between the page and this check would make the answer "no" while the events it
 * held back are readable and unread; the subscriber would then sleep on them for a whole poll interval.
 */
export async function hasUnreadEvents(db: Queryable, after: Checkpoint, types?: readonly string[]): Promise<boolean> {
  const [commit, prepare] = after === 'start' ? ['0', '0'] : [after.commit.toString(), after.prepare.toString()];
  const { rows } = await db.query<{ unread: boolean }>(
    `SELECT EXISTS (
       SELECT 1 FROM gl_events
       WHERE (tx_id, global_position) > ($1::xid8, $2::bigint)
         AND ($3::text[] IS NULL OR type = ANY($3::text[]))
     ) AS unread`,
    [commit, prepare, types ? [...types] : null],
  );
  return rows[0]!.unread;
}
