// Archived days stay provable (docs/verifiable-ledger.md, "Archived days"): an archive file of admission
// summaries carries each event's leaf index and RFC 9162 inclusion proof, its manifest the signed checkpoint
// they lead to. `verifyArchiveFile` checks one offline with the public key alone; `checkArchivedLeaves` lets
// the database verify check the leaves of archived days against their files instead of taking them as stored.
import { open as openFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Queryable } from '../../db/db.ts';
import { ArchiveDamaged, readArchiveLines, verifyArchive, type ArchiveLine } from '../retention/archiveFile.ts';
import { checkEvent, leafHash, type LeafEvent } from './leaf.ts';
import { inclusionProofRanges, verifyInclusion } from './merkle.ts';
import { verifyCheckpoint, type VerifierKey } from './signedNote.ts';
import { storedRangeHashes } from './treeStore.ts';
import type { ExportLine, Verdict } from './verify.ts';

/** RFC 9162 inclusion proofs (hex) of `leaves` in the tree of `treeSize`, read from the stored nodes in one pass. */
export async function storedInclusionProofs(db: Queryable, leaves: readonly number[], treeSize: number): Promise<string[][]> {
  const ranges = leaves.map((leaf) => inclusionProofRanges(leaf, treeSize));
  const hashes = await storedRangeHashes(db, ranges.flat());
  let at = 0;
  return ranges.map((each) => each.map(() => hashes[at++]!.toString('hex')));
}

/** The leaf of an archived event: the same members, in the same text forms, as the ledger's (leaf.ts). */
export function leafEventOfArchiveLine(line: ArchiveLine): LeafEvent {
  return { id: line.id, stream: line.stream, revision: line.revision, type: line.type, data: line.data, metadata: line.metadata, recordedAt: line.recordedAt };
}

const failed = (reason: string, leaf?: number, eventId?: string): Verdict => ({
  ok: false,
  reason,
  ...(leaf !== undefined ? { leaf } : {}),
  ...(eventId !== undefined ? { eventId } : {}),
});

/** Whether a file is gzip (an archive) rather than an NDJSON export. */
export async function isArchiveFile(file: string): Promise<boolean> {
  const handle = await openFile(file, 'r');
  try {
    const magic = Buffer.alloc(2);
    const { bytesRead } = await handle.read(magic, 0, 2, 0);
    return bytesRead === 2 && magic[0] === 0x1f && magic[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/**
 * `governance ledger verify ARCHIVE --public-key KEY`: with no database and no network. The file against its
 * manifest (sha256, size, count), the manifest's checkpoint against the key, then every event's leaf
 * recomputed and its inclusion proof checked against the signed root; names the file and the first bad event.
 */
export async function verifyArchiveFile(file: string, key: VerifierKey): Promise<Verdict> {
  const name = path.basename(file);
  let manifest;
  try {
    manifest = await verifyArchive(file);
  } catch (error) {
    if (error instanceof ArchiveDamaged) return failed(`archive ${name}: ${error.reason}: the archive file or its manifest was edited`);
    throw error;
  }
  if (manifest.checkpoint === undefined) return failed(`archive ${name} carries no proofs (archived from a ledger without its Merkle tree)`);
  const signed = verifyCheckpoint(manifest.checkpoint, key);
  if (!signed.ok) return failed(`archive ${name}: its checkpoint does not verify with the public key: ${signed.reason}`);
  const { treeSize, rootHash, origin } = signed.checkpoint;
  let events = 0;
  let firstLeaf: number | undefined;
  let previous = -1;
  try {
    for await (const { number, line } of readArchiveLines(file)) {
      const event = leafEventOfArchiveLine(line);
      const problem = checkEvent(event);
      if (problem) return failed(`archive ${name}, line ${number}: ${problem}`, undefined, typeof line.id === 'string' ? line.id : undefined);
      const leaf = line.leaf;
      if (typeof leaf !== 'number' || !Number.isSafeInteger(leaf) || leaf <= previous || leaf >= treeSize || !Array.isArray(line.inclusionProof)) {
        return failed(`archive ${name}, line ${number}: event ${event.id} has no leaf index after ${previous} in the tree of ${treeSize}, or no proof`, undefined, event.id);
      }
      const proof = line.inclusionProof.map((hash) => Buffer.from(String(hash), 'hex'));
      if (!verifyInclusion(leaf, treeSize, leafHash(event), proof, rootHash)) {
        return failed(`archive ${name}: event ${event.id} (leaf ${leaf}) is not in the signed tree as it reads: the archive file was edited`, leaf, event.id);
      }
      firstLeaf ??= leaf;
      previous = leaf;
      events++;
    }
  } catch (error) {
    if (error instanceof ArchiveDamaged) return failed(`archive ${name}: ${error.reason}`);
    throw error;
  }
  const leaves = firstLeaf === undefined ? 'no leaves' : `leaves ${firstLeaf}..${previous}`;
  const summary = `ok: archive ${name}: ${events} events of ${manifest.day} (${leaves}) proven in ${origin} at size ${treeSize}, root ${rootHash.toString('base64')}`;
  return { ok: true, summary, treeSize, events, archived: 0, checkpoint: signed.checkpoint };
}

/** The archived days the database lists, and their files, for `checkArchivedLeaves`. */
async function archiveFilesByDay(db: Queryable): Promise<Map<string, string>> {
  const { rows } = await db.query<{ day: string; file: string }>("SELECT to_char(day, 'YYYY-MM-DD') AS day, file FROM gl_ledger_archives");
  return new Map(rows.map((row) => [row.day, row.file]));
}

export interface ArchiveTally {
  /** Archived leaves checked against their archive file. */
  checked: number;
  /** Archive files read. */
  files: number;
  /** Archived leaves whose file was not found where the database recorded it: taken as the tree stored them. */
  takenAsStored: number;
  /** The first archived leaf whose file disagrees with the tree. */
  failure?: Verdict & { ok: false };
}

interface OpenArchive {
  file: string;
  lines: AsyncGenerator<{ number: number; line: ArchiveLine }>;
}

const DAY_MS = 86_400_000;

/**
 * Passes an export's lines on, checking each archived leaf against its day's archive file where that file
 * is found: the file must hold the leaf's event, in the tree's order, with the leaf hash the tree recorded,
 * and nothing more. The first disagreement is kept in the tally and ends the lines (the caller names it).
 */
export async function* checkArchivedLeaves(db: Queryable, lines: AsyncIterable<ExportLine>, tally: ArchiveTally): AsyncIterable<ExportLine> {
  const files = await archiveFilesByDay(db);
  const open = new Map<string, OpenArchive>();
  const missingFiles = new Set<string>();
  // Leaves of archived days come in the global order, day by day (a day overlaps the next only near midnight):
  // a day two days behind the one being read is finished, and its file must hold nothing more.
  const finish = async (day: string): Promise<Verdict | undefined> => {
    const archive = open.get(day)!;
    open.delete(day);
    const rest = await archive.lines.next();
    await archive.lines.return(undefined);
    if (rest.done) return undefined;
    return failed(`archive ${path.basename(archive.file)}: event ${rest.value.line.id} (line ${rest.value.number}) has no leaf in the tree: it was added to the archive file`, undefined, rest.value.line.id);
  };
  const fail = (verdict: Verdict) => {
    tally.failure = verdict as Verdict & { ok: false };
  };
  try {
    for await (const line of lines) {
      if (!('archived' in line) || line.day === undefined) {
        yield line;
        continue;
      }
      const { day } = line;
      const file = files.get(day);
      let archive = open.get(day);
      if (!archive && file !== undefined && !missingFiles.has(day)) {
        if (!(await stat(file).then(() => true, () => false))) missingFiles.add(day);
        else {
          for (const other of [...open.keys()]) {
            if (Date.parse(other) < Date.parse(day) - DAY_MS) {
              const extra = await finish(other);
              if (extra) return fail(extra);
            }
          }
          archive = { file, lines: readArchiveLines(file) };
          open.set(day, archive);
          tally.files++;
        }
      }
      if (!archive) {
        tally.takenAsStored++;
        yield line;
        continue;
      }
      const name = path.basename(archive.file);
      let next;
      try {
        next = await archive.lines.next();
      } catch (error) {
        if (error instanceof ArchiveDamaged) return fail(failed(`archive ${name}: ${error.reason}`, line.leaf, line.stored.eventId));
        throw error;
      }
      if (next.done || next.value.line.id !== line.stored.eventId) {
        return fail(failed(`archive ${name} does not hold event ${line.stored.eventId} (leaf ${line.leaf}) in its place: the archive file was edited`, line.leaf, line.stored.eventId));
      }
      const event = leafEventOfArchiveLine(next.value.line);
      if (checkEvent(event) || leafHash(event).toString('hex') !== line.stored.hash) {
        return fail(failed(`archive ${name}: event ${event.id} (leaf ${line.leaf}) differs from the leaf the tree recorded: the archive file was edited`, line.leaf, event.id));
      }
      tally.checked++;
      yield line;
    }
    for (const day of [...open.keys()]) {
      const extra = await finish(day);
      if (extra) return fail(extra);
    }
  } finally {
    for (const archive of open.values()) await archive.lines.return(undefined);
  }
}
