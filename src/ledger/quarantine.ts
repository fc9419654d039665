// The projection quarantine (migration 0135): events a projection set aside instead of applying, so that no
// event stored in the append-only ledger can hold a read model back for good, or take the service down with it.
// An event is set aside when
// - the projection refuses it (Projection.apply or applyPage answers a Refusal: outside the bounds it documents,
//   e.g. an admission summary spanning more than a day), in the page's own transaction;
// - its application throws a fault that is not the database's (isTransientFault), alone, twice
//   (projectPage.ts); or
// - it ends or stalls its worker thread alone (out of memory, or its event loop held past the budget:
//   projectionWorker.ts).
// The row is written in the same transaction as the checkpoint moves past the event, so exactly-once holds: an
// event is applied, or quarantined, once. A rebuild empties the projection's rows with its read model; the replay
// quarantines again what it still cannot apply.
import type { Db, Queryable } from '../db/db.ts';
import { isConnectionFault, storageUnavailableIn } from '../db/storageUnavailable.ts';
import type { Position, RecordedEvent } from './eventStore.ts';
import { storeCheckpoint, type StoredCheckpoint } from './checkpoints.ts';

/** What the quarantine keeps of an event: where it is in the ledger, not its data (the ledger still holds that). */
export interface EventRef {
  id: string;
  stream: string;
  type: string;
  position: Position;
}

/** An event set aside, and why. */
export interface QuarantinedEvent extends EventRef {
  projection: string;
  reason: string;
  quarantinedAt: Date;
}

/** A reason is kept to this many characters: an error's message can be anything. */
export const MAX_QUARANTINE_REASON_CHARS = 1_000;

export function eventRef(event: RecordedEvent | EventRef): EventRef {
  return { id: event.id, stream: event.stream, type: event.type, position: event.position };
}

/** Writes the rows, in the caller's transaction (the one that moves the checkpoint past the events). */
export async function quarantineEvents(tx: Queryable, projection: string, events: readonly { event: EventRef; reason: string }[]): Promise<void> {
  for (const { event, reason } of events) {
    await tx.query(
      `INSERT INTO gl_projection_quarantine (projection, event_id, commit_position, prepare_position, stream_id, event_type, reason)
       VALUES ($1, $2, $3::bigint, $4::bigint, $5, $6, $7)
       ON CONFLICT (projection, event_id) DO UPDATE SET reason = EXCLUDED.reason, quarantined_at = now()`,
      [
        projection,
        storable(event.id),
        event.position.commit.toString(),
        event.position.prepare.toString(),
        storable(event.stream),
        storable(event.type),
        storable(reason),
      ],
    );
  }
}

/**
 * Sets one event aside from outside any page: moves the checkpoint from `from` to the event and writes its row,
 * in one transaction. False when the checkpoint was no longer `from` (another runner moved it): nothing written.
 */
export async function quarantineAlone(
  db: Db,
  from: StoredCheckpoint,
  event: EventRef,
  reason: string,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    if (!(await storeCheckpoint(tx, from, { ...from, position: event.position }))) return false;
    await quarantineEvents(tx, from.projection, [{ event, reason }]);
    return true;
  });
}

/** Empties a projection's quarantine: with its read model, in a rebuild's or reset's transaction. */
export async function clearQuarantine(tx: Queryable, projection: string): Promise<void> {
  await tx.query('DELETE FROM gl_projection_quarantine WHERE projection = $1', [projection]);
}

interface QuarantineRow {
  projection: string;
  event_id: string;
  commit_position: bigint | string;
  prepare_position: bigint | string;
  stream_id: string;
  event_type: string;
  reason: string;
  quarantined_at: Date;
}

/** The quarantined events, in ledger order (of one projection when named). */
export async function listQuarantine(db: Queryable, { projection }: { projection?: string } = {}): Promise<QuarantinedEvent[]> {
  const result = await db.query<QuarantineRow>(
    `SELECT projection, event_id, commit_position, prepare_position, stream_id, event_type, reason, quarantined_at
       FROM gl_projection_quarantine
      WHERE $1::text IS NULL OR projection = $1
      ORDER BY commit_position, prepare_position, projection`,
    [projection ?? null],
  );
  return result.rows.map((row) => ({
    projection: row.projection,
    id: row.event_id,
    stream: row.stream_id,
    type: row.event_type,
    position: { commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) },
    reason: row.reason,
    quarantinedAt: row.quarantined_at instanceof Date ? row.quarantined_at : new Date(row.quarantined_at),
  }));
}

/** How many events each projection has set aside (projections with none are absent). */
export async function countQuarantine(db: Queryable): Promise<{ projection: string; events: number }[]> {
  const result = await db.query<{ projection: string; events: number | string | bigint }>(
    'SELECT projection, count(*) AS events FROM gl_projection_quarantine GROUP BY projection ORDER BY projection',
  );
  return result.rows.map((row) => ({ projection: row.projection, events: Number(row.events) }));
}

/** Every running projection's quarantined events, 0 for those with none (the metric's source). */
export async function projectionQuarantineCounts(db: Queryable, projections: { runners: readonly { projection: { name: string } }[] }) {
  const counts = new Map(projections.runners.map((runner) => [runner.projection.name, 0]));
  for (const { projection, events } of await countQuarantine(db)) counts.set(projection, events);
  return [...counts].map(([projection, events]) => ({ projection, events }));
}

// SQLSTATE classes of faults that are not the event's, retried rather than quarantined: trying again may clear
// them (40 transaction rollback: serialization failure, deadlock; 53 insufficient resources: disk full, out of
// memory, too many connections; 55 object not in prerequisite state, e.g. a lock not available; 57 operator
// intervention: a query canceled, a shutdown; 58 system errors: I/O), or they say the database or the code is
// wrong for every event alike, and quarantining would set aside the whole ledger (42 a missing table or column,
// a permission; 28 authorization; 3D, 3F a missing database or schema; XX internal errors). Data exceptions
// (22: a value out of range) and integrity violations (23) are the event's.
const TRANSIENT_CLASSES = new Set(['40', '53', '55', '57', '58', '42', '28', '3D', '3F', 'XX']);

/**
 * Whether a fault met while applying an event is the database's (away, overloaded, a conflict with another
 * transaction, a schema or permission that fails every event alike) rather than the event's: those are retried
 * for as long as they last and never quarantine anything.
 */
export function isTransientFault(error: unknown): boolean {
  if (storageUnavailableIn(error) || isConnectionFault(error)) return true;
  for (let at = error, depth = 0; typeof at === 'object' && at !== null && depth < 8; depth++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && TRANSIENT_CLASSES.has(code.slice(0, 2))) return true;
    at = (at as { cause?: unknown }).cause;
  }
  return false;
}

/** A fault as a quarantine reason: its name and message, one line. */
export function faultReason(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.replace(/\s+/g, ' ').trim();
}

/** Text PostgreSQL can store (no U+0000, no lone surrogates), within MAX_QUARANTINE_REASON_CHARS. */
function storable(text: string): string {
  const kept = text.length > MAX_QUARANTINE_REASON_CHARS ? `${text.slice(0, MAX_QUARANTINE_REASON_CHARS - 1)}…` : text;
  return kept.replaceAll('\u0000', '').replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
}
