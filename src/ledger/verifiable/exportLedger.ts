// Exporting a range of the tree from the database (docs/verifiable-ledger.md, "The export file"), and the
// database verify, which runs the offline verifier over an export of the whole stored tree. With `ledger` the
// tree was kept through the EventStore port (EventStoreDB, portTree.ts) and the events are read through it.
import type { Queryable } from '../../db/db.ts';
import type { EventStore } from '../eventStore.ts';
import { portExportLines } from './portExport.ts';
import { checkArchivedLeaves, type ArchiveTally } from './archiveProofs.ts';
import { countWithinPageBudget, STORED_BYTES_SQL } from '../readPageBudget.ts';
import { checkpointAtOrBelow, latestCheckpoint, listCheckpoints, type SignedCheckpoint } from './checkpointer.ts';
import type { LeafEvent } from './leaf.ts';
import { parseVerifierKey, verifyCheckpoint, type VerifierKey } from './signedNote.ts';
import { LEAF_COLUMNS, leafEventOf, readTreeHead, storedConsistencyProof, storedRangeHashes, type LeafRow } from './treeStore.ts';
import { EXPORT_FORMAT, rangesOutside, verifyExport, type ExportHeader, type ExportLine, type Verdict } from './verify.ts';

/** No checkpoint covers what was asked, or the range is not in the tree: an expected outcome, with its reason. */
export class NothingToExport extends Error {
  override readonly name = 'NothingToExport';
}

export interface ExportRange {
  /** A leaf index, or an instant: the first event recorded at or after it. */
  from?: number | Date | undefined;
  /** A leaf index (exclusive), or an instant: events recorded before it. */
  to?: number | Date | undefined;
  /** An earlier checkpoint (signed note) whose consistency proof to carry. */
  since?: string | undefined;
}

const PAGE = 5_000;

/** The events after $1/$2 up to and with $3/$4, in the global order, $5 at most. */
const EVENTS_BETWEEN = `WHERE (g.tx_id, g.global_position) > ($1::xid8, $2::bigint) AND (g.tx_id, g.global_position) <= ($3::xid8, $4::bigint)
  ORDER BY g.tx_id, g.global_position LIMIT $5`;

async function leafAt(db: Queryable, at: Date, throughPort: boolean): Promise<number> {
  // The first leaf whose event was recorded at or after `at`; the tree's size when none was. A tree kept
  // through the port records the time beside the leaf: its events are not in this database.
  const { rows } = await db.query<{ leaf_index: string | null }>(
    throughPort
      ? 'SELECT min(l.leaf_index)::text AS leaf_index FROM gl_merkle_leaves l WHERE l.recorded_at >= $1'
      : `SELECT min(l.leaf_index)::text AS leaf_index FROM gl_merkle_leaves l JOIN gl_events e ON e.event_id = l.event_id WHERE e.recorded_at >= $1`,
    [at.toISOString()],
  );
  return rows[0]?.leaf_index != null ? Number(rows[0].leaf_index) : (await readTreeHead(db)).size;
}

/** The header and lines of an export of [from, to) against the latest checkpoint covering `to`. */
export async function exportLedger(
  db: Queryable,
  range: ExportRange = {},
  ledger?: EventStore,
): Promise<{ header: ExportHeader; lines: AsyncIterable<ExportLine> }> {
  const checkpoint = await latestCheckpoint(db);
  if (!checkpoint) throw new NothingToExport('no checkpoint has been signed yet: the tree is signed every GOVERNANCE_CHECKPOINT_SECONDS while events are appended');
  const fromLeaf = range.from instanceof Date ? await leafAt(db, range.from, ledger !== undefined) : (range.from ?? 0);
  const toLeaf = Math.min(range.to instanceof Date ? await leafAt(db, range.to, ledger !== undefined) : (range.to ?? checkpoint.treeSize), checkpoint.treeSize);
  if (fromLeaf > toLeaf) throw new NothingToExport(`nothing to export: from leaf ${fromLeaf} is past ${toLeaf} (the latest checkpoint's size is ${checkpoint.treeSize})`);

  const outsideRanges = rangesOutside(checkpoint.treeSize, fromLeaf, toLeaf);
  const outsideHashes = await storedRangeHashes(db, outsideRanges);
  const consistency: ExportHeader['consistency'] = [];
  const fromSizes = new Set<number>();
  const before = await checkpointAtOrBelow(db, fromLeaf);
  if (before) fromSizes.add(before.treeSize);
  if (range.since !== undefined) {
    const since = parseSince(range.since, checkpoint);
    if (since > checkpoint.treeSize) throw new NothingToExport(`the --since checkpoint (size ${since}) is later than the latest one (size ${checkpoint.treeSize})`);
    fromSizes.add(since);
  }
  for (const fromSize of fromSizes) {
    if (fromSize === 0 || fromSize >= checkpoint.treeSize) continue;
    consistency.push({ fromSize, proof: (await storedConsistencyProof(db, fromSize, checkpoint.treeSize)).map((hash) => hash.toString('hex')) });
  }
  const header: ExportHeader = {
    format: EXPORT_FORMAT,
    checkpoint: checkpoint.note,
    fromLeaf,
    toLeaf,
    outside: outsideRanges.map(([start, end], i) => [start, end, outsideHashes[i]!.toString('hex')]),
    consistency,
  };
  return { header, lines: ledger ? portExportLines(db, ledger, fromLeaf, toLeaf) : exportLines(db, fromLeaf, toLeaf) };
}

function parseSince(note: string, latest: SignedCheckpoint): number {
  const key = parseVerifierKey(latest.verifierKey);
  const verdict = verifyCheckpoint(note, key);
  if (!verdict.ok) throw new NothingToExport(`the --since checkpoint does not verify with this ledger's key: ${verdict.reason}`);
  return verdict.checkpoint.treeSize;
}

interface StoredLeafRow {
  leaf_index: string;
  event_id: string;
  tx_id: string;
  global_position: string;
  hash: string;
  archived: boolean;
  summary_day: string | null;
}

/**
 * The events in the global order as the database holds them now, beside the leaves the tree recorded for
 * [from, to): paired in order, so an event deleted, moved or inserted shows as a leaf whose event differs.
 */
async function* exportLines(db: Queryable, fromLeaf: number, toLeaf: number): AsyncIterable<ExportLine> {
  if (fromLeaf === toLeaf) return;
  // Events from just after the leaf before `from` up to the last exported leaf's position.
  const { rows: bounds } = await db.query<{ leaf_index: string; tx_id: string; global_position: string }>(
    `SELECT leaf_index::text, tx_id::text, global_position::text FROM gl_merkle_leaves WHERE leaf_index IN ($1, $2)`,
    [String(fromLeaf - 1), String(toLeaf - 1)],
  );
  const start = bounds.find((row) => Number(row.leaf_index) === fromLeaf - 1);
  const end = bounds.find((row) => Number(row.leaf_index) === toLeaf - 1);
  if (!end) throw new Error(`the tree has no leaf ${toLeaf - 1}`);
  let eventsAfter = { tx: start?.tx_id ?? '0', pos: start?.global_position ?? '0' };
  let eventPage: LeafRow[] = [];
  let eventsDone = false;
  const nextEvent = async (): Promise<LeafRow | undefined> => {
    if (eventPage.length === 0 && !eventsDone) {
      const bounds = [eventsAfter.tx, eventsAfter.pos, end.tx_id, end.global_position];
      // A page of PAGE summaries would be gigabytes in one statement: it stops at the byte budget (readPageBudget.ts).
      const { rows: sizes } = await db.query<{ bytes: number }>(
        `SELECT ${STORED_BYTES_SQL} AS bytes FROM gl_events g ${EVENTS_BETWEEN}`,
        [...bounds, PAGE],
      );
      const count = countWithinPageBudget(sizes.map((row) => Number(row.bytes)));
      const { rows } = count === 0 ? { rows: [] } : await db.query<LeafRow>(`SELECT ${LEAF_COLUMNS} FROM gl_events g ${EVENTS_BETWEEN}`, [...bounds, count]);
      eventPage = rows.reverse();
      if (sizes.length < PAGE && rows.length === sizes.length) eventsDone = true;
      const last = rows[0];
      if (last) eventsAfter = { tx: last.tx_id, pos: last.global_position };
    }
    return eventPage.pop();
  };
  let pendingEvent = await nextEvent();
  const line = (leaf: number, row: LeafRow, stored?: StoredLeafRow): ExportLine => {
    const event: LeafEvent = leafEventOf(row);
    return stored ? { leaf, event, stored: { eventId: stored.event_id, hash: stored.hash } } : { leaf, event };
  };
  let leaf = fromLeaf;
  for (let pageFrom = fromLeaf; pageFrom < toLeaf; pageFrom += PAGE) {
    const { rows: stored } = await db.query<StoredLeafRow>(
      `SELECT l.leaf_index::text, l.event_id::text, l.tx_id::text, l.global_position::text, encode(l.hash, 'hex') AS hash,
              (l.summary_day IS NOT NULL AND EXISTS (SELECT 1 FROM gl_ledger_archives a WHERE a.day = l.summary_day)) AS archived,
              to_char(l.summary_day, 'YYYY-MM-DD') AS summary_day
         FROM gl_merkle_leaves l WHERE l.leaf_index >= $1 AND l.leaf_index < $2 ORDER BY l.leaf_index`,
      [String(pageFrom), String(Math.min(pageFrom + PAGE, toLeaf))],
    );
    for (const claim of stored) {
      const storedClaim = { eventId: claim.event_id, hash: claim.hash };
      if (claim.archived && pendingEvent?.id !== claim.event_id) {
        yield { leaf, archived: true, day: claim.summary_day!, stored: storedClaim };
      } else if (!pendingEvent) {
        yield { leaf, missing: true, stored: storedClaim };
      } else {
        yield line(leaf, pendingEvent, claim);
        pendingEvent = await nextEvent();
      }
      leaf++;
    }
  }
  // Events that sort inside the exported range but have no leaf: inserted after the fact.
  while (pendingEvent) {
    yield line(leaf++, pendingEvent);
    pendingEvent = await nextEvent();
  }
}

async function* jsonLines(header: ExportHeader, lines: AsyncIterable<ExportLine>): AsyncIterable<string> {
  yield JSON.stringify(header);
  for await (const line of lines) yield JSON.stringify(line);
}

/** The export as NDJSON text lines (header first), what `governance ledger export` writes. */
export async function exportLedgerLines(db: Queryable, range: ExportRange = {}, ledger?: EventStore): Promise<AsyncIterable<string>> {
  const { header, lines } = await exportLedger(db, range, ledger);
  return jsonLines(header, lines);
}

/**
 * `governance ledger verify` against the database: every stored checkpoint's signature, then every event of
 * the tree recomputed and checked against the latest checkpoint's root and every earlier one's on the way.
 * With `ledger` (EventStoreDB) the events are read through the port; such a ledger has no archived days.
 */
export async function verifyStoredLedger(db: Queryable, key: VerifierKey, ledger?: EventStore): Promise<Verdict> {
  const checkpoints = await listCheckpoints(db);
  if (checkpoints.length === 0) return { ok: false, reason: 'no checkpoint has been signed yet' };
  const rootsAt = new Map<number, { root: Buffer; name: string }>();
  for (const checkpoint of checkpoints) {
    const verdict = verifyCheckpoint(checkpoint.note, key);
    if (!verdict.ok) return { ok: false, reason: `the checkpoint of size ${checkpoint.treeSize} does not verify with the public key: ${verdict.reason}` };
    if (!verdict.checkpoint.rootHash.equals(checkpoint.rootHash)) {
      return { ok: false, reason: `the checkpoint of size ${checkpoint.treeSize} is recorded with another root than it signs` };
    }
    rootsAt.set(checkpoint.treeSize, { root: verdict.checkpoint.rootHash, name: `the checkpoint of size ${checkpoint.treeSize}` });
  }
  const { header, lines } = await exportLedger(db, { from: 0 }, ledger);
  const tally: ArchiveTally = { checked: 0, files: 0, takenAsStored: 0 };
  const verdict = await verifyExport(jsonLines(header, ledger ? lines : checkArchivedLeaves(db, lines, tally)), key, { rootsAt });
  // The lines end at the first archived leaf whose file disagrees: a bad event before it names the verdict.
  const archiveFailure = tally.failure;
  if (archiveFailure && (verdict.ok || verdict.leaf === undefined || archiveFailure.leaf === undefined || archiveFailure.leaf <= verdict.leaf)) return archiveFailure;
  if (!verdict.ok) return verdict;
  const archived =
    verdict.archived > 0
      ? `; archived leaves: ${tally.checked} checked against ${tally.files} archive files, ${tally.takenAsStored} taken as stored (their files not found)`
      : '';
  return { ...verdict, summary: `${verdict.summary}; ${checkpoints.length} checkpoints verified${archived}` };
}
