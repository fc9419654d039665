// Archiving a day of admission summaries: its partition is written to a compressed file with a manifest,
// the file is read back and checked, an operator's hook may copy it elsewhere, and only then is the
// partition detached and dropped, in one transaction with the record of the archive (gl_ledger_archives).
// A day is archived only once it has ended and once every projection that reads summaries has applied all
// of it, so no read model ever misses an event because its raw copy left the ledger.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Db, Queryable, Tx } from '../../db/db.ts';
import { comparePositions, type Position } from '../eventStore.ts';
import { loadCheckpoint } from '../checkpoints.ts';
import { countWithinPageBudget, STORED_BYTES_SQL } from '../readPageBudget.ts';
import type { Projection } from '../projection.ts';
import {
  addDays,
  dayOf,
  listSummaryPartitions,
  SUMMARY_EVENT_TYPES,
  SUMMARY_STREAM,
  type Day,
  type SummaryPartition,
} from '../postgres/summaryPartitions.ts';
import { verifyArchive, writeArchive, type ArchiveManifest } from './archiveFile.ts';
import { storedInclusionProofs } from '../verifiable/archiveProofs.ts';
import { latestCheckpoint } from '../verifiable/checkpointer.ts';
import { MERKLE_TREE_READER } from '../verifiable/treeStore.ts';

const run = promisify(execFile);

export interface ArchiveOptions {
  /** Where the files go. */
  dir: string;
  /** Every day partition of a day before this one (UTC, YYYY-MM-DD) is archived, once that day has ended. */
  before: Day;
  /** The projections that run on this ledger: each one that reads summaries must have applied a day first. */
  projections: readonly Pick<Projection, 'name' | 'eventTypes'>[];
  /**
   * GOVERNANCE_LEDGER_ARCHIVE_COMMAND: run by /bin/sh with the archive file as $1 and its manifest as $2 once
   * both are written and checked (e.g. a copy to object storage). The partition is dropped only when it
   * exits 0; otherwise the day is tried again next time.
   */
  command?: string | undefined;
  /** Events read per query while writing a file. */
  pageSize?: number;
  now?: () => number;
  onArchived?: (day: ArchivedDay) => void;
  /** Asked before each day: true stops after the day under way (the service is closing). */
  stopped?: () => boolean;
}

export interface ArchivedDay {
  day: Day;
  file: string;
  manifestFile: string;
  manifest: ArchiveManifest;
}

export interface SkippedDay {
  day: Day;
  reason: string;
}

export interface ArchiveOutcome {
  archived: ArchivedDay[];
  skipped: SkippedDay[];
}

/** Archives every day partition before `options.before` that may go (see the file's comment), oldest first. */
export async function archiveSummaryDays(db: Db, options: ArchiveOptions): Promise<ArchiveOutcome> {
  const now = options.now ?? Date.now;
  const today = dayOf(now());
  const outcome: ArchiveOutcome = { archived: [], skipped: [] };
  for (const partition of await listSummaryPartitions(db)) {
    if (options.stopped?.()) break;
    if (partition.day >= options.before) continue;
    // Today's and the coming days' partitions are still being written.
    if (addDays(partition.day, 1) > today) continue;
    const result = await archiveTurn(db, (finish) => archiveDay(db, partition, options, now, finish));
    if (result === 'busy') outcome.skipped.push({ day: partition.day, reason: 'another process is archiving' });
    else if ('reason' in result) outcome.skipped.push(result);
    else {
      outcome.archived.push(result);
      options.onArchived?.(result);
    }
  }
  return outcome;
}

type Finish = <T>(step: (tx: Tx) => Promise<T>) => Promise<T>;

/**
 * One day's archive, one process at a time: on PostgreSQL a transaction holds an advisory lock for the
 * whole of it (reads go through other connections; it writes nothing until the final step, so it holds no
 * reader back) and runs the final step. PGlite is one connection in one process: the final step is a
 * transaction of its own.
 */
async function archiveTurn<T>(db: Db, work: (finish: Finish) => Promise<T>): Promise<T | 'busy'> {
  if (db.kind === 'pglite') return work((step) => db.transaction(step));
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ locked: boolean }>(
      "SELECT pg_try_advisory_xact_lock(hashtext('governance-ledger archive'), hashtext(current_schema())) AS locked",
    );
    if (!rows[0]?.locked) return 'busy';
    return work((step) => step(tx));
  });
}

async function archiveDay(db: Db, partition: SummaryPartition, options: ArchiveOptions, now: () => number, finish: Finish): Promise<ArchivedDay | SkippedDay> {
  const { day, table } = partition;
  const last = await lastPosition(db, table);
  if (last) {
    const behind = await projectionsBehind(db, options.projections, last);
    if (behind.length > 0) return { day, reason: `not yet applied by ${behind.join(', ')}` };
  }
  // With the ledger's Merkle tree among the readers, every line carries its leaf's inclusion proof against a
  // signed checkpoint covering the whole day, so the day stays provable once it has left the database.
  let checkpoint: { note: string; treeSize: number } | undefined;
  if (last && options.projections.some((each) => each.name === MERKLE_TREE_READER.name)) {
    const lastLeaf = await leafOf(db, last.eventId);
    if (lastLeaf === undefined) return { day, reason: 'the Merkle tree has no leaf for the day\'s last event yet; tried again next time' };
    checkpoint = await latestCheckpoint(db);
    if (!checkpoint || checkpoint.treeSize <= lastLeaf) return { day, reason: `no signed checkpoint covers the day's last leaf (${lastLeaf}) yet; tried again next time` };
  }
  let written;
  try {
    written = await writeArchive(options.dir, SUMMARY_STREAM, day, exportPages(db, table, options.pageSize ?? 1_000, checkpoint?.treeSize), {
      now,
      checkpoint: checkpoint?.note,
    });
  } catch (error) {
    if (error instanceof DayNotInTree) return { day, reason: error.message };
    throw error;
  }
  const manifest = await verifyArchive(written.file);
  if (options.command) {
    try {
      await run('/bin/sh', ['-c', options.command, 'governance-ledger-archive', written.file, written.manifestFile], {
        env: { ...process.env, GOVERNANCE_ARCHIVE_FILE: written.file, GOVERNANCE_ARCHIVE_MANIFEST: written.manifestFile, GOVERNANCE_ARCHIVE_SHA256: manifest.sha256 },
        maxBuffer: 16 * 1024 * 1024,
      });
    } catch (error) {
      const detail = (error as { stderr?: string }).stderr?.trim() || (error as Error).message;
      return { day, reason: `the archive command failed, the partition stays: ${detail.split('\n')[0]}` };
    }
  }
  const dropped = await finish(async (tx) => {
    // Waits at most this long for readers of the summaries to finish (DETACH locks gl_events_summaries), so a
    // long read never queues every reader behind the detach; the day is tried again next time.
    await tx.query("SET LOCAL lock_timeout = '10s'");
    await tx.query(`ALTER TABLE gl_events_summaries DETACH PARTITION ${table}`);
    // An append still open when the file was written would have committed rows it does not hold.
    const { rows } = await tx.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`);
    if (Number(rows[0]!.n) !== manifest.events) return false;
    await tx.query(`DROP TABLE ${table}`);
    await tx.query(
      `INSERT INTO gl_ledger_archives (day, stream, file, sha256, bytes, events, first_position, last_position)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (day) DO UPDATE SET file = EXCLUDED.file, sha256 = EXCLUDED.sha256, bytes = EXCLUDED.bytes,
         events = EXCLUDED.events, first_position = EXCLUDED.first_position, last_position = EXCLUDED.last_position, archived_at = now()`,
      [day, SUMMARY_STREAM, written.file, manifest.sha256, manifest.bytes, manifest.events, manifest.first, manifest.last],
    );
    return true;
  }).catch((error: unknown) => {
    // Rolled back: the partition is still attached.
    if ((error as { code?: string }).code === '55P03') return 'lock' as const;
    throw error;
  });
  if (dropped === 'lock') return { day, reason: 'readers held the summaries past the lock timeout; tried again next time' };
  if (!dropped) return { day, reason: 'events were added to the day while it was written; tried again next time' };
  return { day, file: written.file, manifestFile: written.manifestFile, manifest };
}

/** The last event of the partition in the global order. */
async function lastPosition(db: Queryable, table: string): Promise<(Position & { eventId: string }) | undefined> {
  const { rows } = await db.query<{ tx_id: bigint; global_position: bigint; event_id: string }>(
    `SELECT tx_id, global_position, event_id::text AS event_id FROM ${table} ORDER BY tx_id DESC, global_position DESC LIMIT 1`,
  );
  return rows[0] ? { commit: BigInt(rows[0].tx_id), prepare: BigInt(rows[0].global_position), eventId: rows[0].event_id } : undefined;
}

async function leafOf(db: Queryable, eventId: string): Promise<number | undefined> {
  const { rows } = await db.query<{ leaf_index: string }>('SELECT leaf_index::text FROM gl_merkle_leaves WHERE event_id = $1::uuid', [eventId]);
  return rows[0] ? Number(rows[0].leaf_index) : undefined;
}

/** An event of the day has no leaf in the tree (it was appended while the file was written): the day waits. */
class DayNotInTree extends Error {
  override readonly name = 'DayNotInTree';
}

/** Names of the projections reading summaries whose checkpoint is not yet at or past `last`. */
async function projectionsBehind(db: Queryable, projections: ArchiveOptions['projections'], last: Position): Promise<string[]> {
  const behind: string[] = [];
  for (const projection of projections) {
    if (!projection.eventTypes.some((type) => SUMMARY_EVENT_TYPES.includes(type))) continue;
    const checkpoint = await loadCheckpoint(db, projection.name);
    const position = checkpoint?.position;
    if (!position || position === 'start' || checkpoint.ledger?.kind !== 'postgres' || comparePositions(position, last) < 0) behind.push(projection.name);
  }
  return behind;
}

/**
 * The partition's events as NDJSON, a page per query in the global order (readPageBudget.ts); each line built by
 * PostgreSQL. Given a checkpoint's tree size, each line also carries its leaf index and inclusion proof in that tree.
 */
async function* exportPages(db: Queryable, table: string, pageSize: number, treeSize?: number) {
  let after: [string, string] = ['0', '0'];
  for (;;) {
    // A day of 50,000 tenants' summaries is about 512 KiB an event: pageSize of them built into one statement's
    // lines would be far past the pool's 30 s query timeout. The page stops at the byte budget.
    const { rows: sizes } = await db.query<{ bytes: number }>(
      `SELECT ${STORED_BYTES_SQL} AS bytes FROM ${table} g
        WHERE (tx_id, global_position) > ($1::xid8, $2::bigint) ORDER BY tx_id, global_position LIMIT $3`,
      [...after, pageSize],
    );
    if (sizes.length === 0) return;
    const count = countWithinPageBudget(sizes.map((row) => Number(row.bytes)));
    const { rows } = await db.query<{ commit: string; prepare: string; line: string; leaf: string | null }>(
      `SELECT e.tx_id::text AS commit, e.global_position::text AS prepare, l.leaf_index::text AS leaf,
              jsonb_build_object(
                'id', e.event_id, 'stream', e.stream, 'revision', e.revision::text,
                'position', jsonb_build_object('commit', e.tx_id::text, 'prepare', e.global_position::text),
                'type', e.type, 'data', e.data, 'metadata', e.metadata,
                'recordedAt', to_char(e.recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text AS line
         FROM ${table} e LEFT JOIN gl_merkle_leaves l ON l.event_id = e.event_id
        WHERE (e.tx_id, e.global_position) > ($1::xid8, $2::bigint)
        ORDER BY e.tx_id, e.global_position
        LIMIT $3`,
      [...after, count],
    );
    if (rows.length === 0) return;
    const first = rows[0]!;
    const last = rows[rows.length - 1]!;
    let text: string;
    if (treeSize === undefined) text = rows.map((row) => `${row.line}\n`).join('');
    else {
      const leaves = rows.map((row) => (row.leaf === null ? Number.NaN : Number(row.leaf)));
      const outside = leaves.findIndex((leaf) => !(leaf < treeSize));
      if (outside >= 0) throw new DayNotInTree(`event at ${rows[outside]!.commit}:${rows[outside]!.prepare} is not in the signed tree of ${treeSize} yet; tried again next time`);
      const proofs = await storedInclusionProofs(db, leaves, treeSize);
      // The object PostgreSQL built, with two members more: `}` is always its last character.
      text = rows.map((row, i) => `${row.line.slice(0, -1)}, "leaf": ${leaves[i]}, "inclusionProof": ${JSON.stringify(proofs[i])}}\n`).join('');
    }
    yield {
      text,
      lines: rows.length,
      first: { commit: BigInt(first.commit), prepare: BigInt(first.prepare) },
      last: { commit: BigInt(last.commit), prepare: BigInt(last.prepare) },
    };
    after = [last.commit, last.prepare];
    if (sizes.length < pageSize && rows.length === sizes.length) return;
  }
}

export interface ArchiveRecord {
  day: Day;
  file: string;
  sha256: string;
  events: number;
}

/** The days archived so far, oldest first. */
export async function listArchivedDays(db: Queryable): Promise<ArchiveRecord[]> {
  const { rows } = await db.query<{ day: string; file: string; sha256: string; events: string }>(
    "SELECT to_char(day, 'YYYY-MM-DD') AS day, file, sha256, events::text AS events FROM gl_ledger_archives ORDER BY day",
  );
  return rows.map((row) => ({ day: row.day, file: row.file, sha256: row.sha256, events: Number(row.events) }));
}
