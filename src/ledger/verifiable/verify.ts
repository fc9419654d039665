// Verifying an export (docs/verifiable-ledger.md, "The export file"): with the log's public key only, no
// database and no network. Each event's leaf is recomputed from the event, the signed checkpoint checked, the
// root rebuilt from the leaves and the hashes of the subtrees outside the exported range, and, given an earlier
// checkpoint, the consistency of the two. The same check runs over the database (`verifyStoredLedger`).
import type { LeafEvent } from './leaf.ts';
import { LineKind } from './exportLines.ts';
import { analyseLines, defaultLeafHashers, PARALLEL_FROM_LEAVES } from './leafHashers.ts';
import { hashChildren, largestPowerOfTwoBelow, TreeBuilder, verifyConsistency, type Range } from './merkle.ts';
import { verifyCheckpoint, type TreeCheckpoint, type VerifierKey } from './signedNote.ts';

export const EXPORT_FORMAT = 'governance-ledger-export/v1';

export interface ExportHeader {
  format: typeof EXPORT_FORMAT;
  /** The signed checkpoint (a C2SP signed note) the export is proven against. */
  checkpoint: string;
  /** The exported leaves: [fromLeaf, toLeaf). */
  fromLeaf: number;
  toLeaf: number;
  /** Hashes (hex) of the subtrees outside [fromLeaf, toLeaf) that the root needs, as [start, end, hash]. */
  outside: [number, number, string][];
  /** Consistency proofs (hex hashes) to the checkpoint's size from earlier sizes. */
  consistency: { fromSize: number; proof: string[] }[];
}

/** One exported leaf: its event, or why there is none, and what the stored tree holds for it. */
export type ExportLine =
  | { leaf: number; event: LeafEvent; stored?: StoredClaim }
  | { leaf: number; archived: true; day?: string; stored: StoredClaim }
  | { leaf: number; missing: true; stored: StoredClaim };

/** What gl_merkle_leaves holds for a leaf: which event it was hashed from, and the hash. */
export interface StoredClaim {
  eventId: string;
  hash: string;
}

export type Verdict =
  | { ok: true; summary: string; treeSize: number; events: number; archived: number; checkpoint: TreeCheckpoint }
  | { ok: false; reason: string; leaf?: number; eventId?: string };

export interface VerifyOptions {
  /** An earlier signed checkpoint the exported one must be consistent with. */
  since?: string | undefined;
  /** Roots to check along the way when the export starts at leaf 0 (the stored checkpoints of a database verify). */
  rootsAt?: ReadonlyMap<number, { root: Buffer; name: string }>;
  /** Worker threads that parse and hash the lines; 0 verifies on this thread alone. Default: one per core beside this one from PARALLEL_FROM_LEAVES leaves. */
  threads?: number;
}

/** A bad event: the first one found names the verdict. */
function bad(reason: string, leaf?: number, eventId?: string): Verdict {
  return { ok: false, reason, ...(leaf !== undefined ? { leaf } : {}), ...(eventId !== undefined ? { eventId } : {}) };
}

export async function verifyExport(lines: AsyncIterable<string>, key: VerifierKey, options: VerifyOptions = {}): Promise<Verdict> {
  const iterator = lines[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done) return bad('the file is empty');
  let header: ExportHeader;
  try {
    header = JSON.parse(first.value) as ExportHeader;
  } catch {
    return bad('the first line is not the export header');
  }
  if (header.format !== EXPORT_FORMAT) return bad(`the file is not a ${EXPORT_FORMAT} export`);
  const signed = verifyCheckpoint(header.checkpoint, key);
  if (!signed.ok) return bad(`the checkpoint does not verify with the public key: ${signed.reason}`);
  const checkpoint = signed.checkpoint;
  const { fromLeaf, toLeaf } = header;
  if (!Number.isSafeInteger(fromLeaf) || !Number.isSafeInteger(toLeaf) || fromLeaf < 0 || fromLeaf > toLeaf || toLeaf > checkpoint.treeSize) {
    return bad(`the exported leaves [${fromLeaf}, ${toLeaf}) are not in the checkpoint's tree of ${checkpoint.treeSize}`);
  }

  // The earlier checkpoint first: a bad one needs no pass over the events.
  if (options.since !== undefined) {
    const earlier = verifyCheckpoint(options.since, key);
    if (!earlier.ok) return bad(`the --since checkpoint does not verify with the public key: ${earlier.reason}`);
    const { treeSize: fromSize, rootHash: fromRoot } = earlier.checkpoint;
    if (fromSize > checkpoint.treeSize) return bad(`the --since checkpoint (size ${fromSize}) is later than the export's (size ${checkpoint.treeSize})`);
    const proof = header.consistency.find((each) => each.fromSize === fromSize);
    if (fromSize < checkpoint.treeSize && fromSize > 0 && !proof) {
      return bad(`the file carries no consistency proof from size ${fromSize}; export it with --since that checkpoint`);
    }
    const hashes = (proof?.proof ?? []).map((hash) => Buffer.from(hash, 'hex'));
    if (!verifyConsistency(fromSize, checkpoint.treeSize, fromRoot, checkpoint.rootHash, hashes)) {
      return bad(`the checkpoint of size ${checkpoint.treeSize} is not consistent with the --since checkpoint of size ${fromSize}: the history was rewritten`);
    }
  }

  const leaves = Buffer.alloc((toLeaf - fromLeaf) * 32);
  const builder = fromLeaf === 0 ? new TreeBuilder() : undefined;
  let expected = fromLeaf;
  let events = 0;
  let archived = 0;
  let firstBad: Verdict | undefined;
  let displaced: { leaf: number; recorded: string; found: string; foundHasLeaf: boolean; recordedStillThere: boolean } | undefined;
  // Parsing and hashing each line needs no other line: for a large export it runs in worker threads.
  const threads = options.threads ?? (toLeaf - fromLeaf >= PARALLEL_FROM_LEAVES ? defaultLeafHashers() : 0);
  for await (const batch of analyseLines(iterator, threads)) {
    for (let i = 0; i < batch.count; i++) {
      const kind = batch.kinds[i]!;
      if (kind === LineKind.blank) continue;
      if (kind === LineKind.unparsable) return bad(`the line after leaf ${expected - 1} is not JSON`, expected);
      if (batch.leaves[i] !== expected) return bad(`leaf ${batch.leaves[i]} is out of order (leaf ${expected} expected)`, expected);
      const eventId = batch.eventIds[i];
      if (expected >= toLeaf) {
        const id = kind === LineKind.event ? eventId : undefined;
        // Past the tree's end only because something earlier shifted the order: that names the event.
        if (displaced || firstBad) {
          if (displaced && id === displaced.recorded) displaced.recordedStillThere = true;
          expected++;
          continue;
        }
        return bad(`event ${id ?? '?'} follows the last leaf of the tree (${toLeaf - 1}) but sorts before it: it was inserted after the fact`, expected, id);
      }
      if (kind === LineKind.event) {
        const problem = batch.problems[i];
        if (problem !== undefined) return bad(`leaf ${expected}: ${problem}`, expected, eventId);
        const storedId = batch.storedIds[i];
        events++;
        if (displaced && storedId === displaced.found) displaced.foundHasLeaf = true;
        if (displaced && eventId === displaced.recorded) displaced.recordedStillThere = true;
        if (!firstBad && !displaced && storedId === undefined) {
          firstBad = bad(`event ${eventId} sorts inside the tree but has no leaf: it was inserted after the fact`, expected, eventId);
        } else if (!firstBad && !displaced && storedId !== eventId) {
          // Which of the two is the bad one shows further on: the recorded event may come later (moved) or never
          // (deleted); the found one may have a leaf of its own (moved) or none (inserted).
          displaced = { leaf: expected, recorded: storedId!, found: eventId!, foundHasLeaf: false, recordedStillThere: false };
        } else if (!firstBad && !displaced && batch.hashMatches[i] !== 1) {
          firstBad = bad(`event ${eventId} (leaf ${expected}) was changed after it was recorded: its leaf hash differs`, expected, eventId);
        }
      } else if (kind === LineKind.archived) {
        // Its event left the database with its archived day: the tree's leaf stands in for it.
        archived++;
      } else {
        if (displaced && eventId === displaced.found) displaced.foundHasLeaf = true;
        if (!firstBad && !displaced) firstBad = bad(`event ${eventId} (leaf ${expected}) is missing from the ledger: it was deleted`, expected, eventId);
      }
      if (batch.hashWhole[i] !== 1) return bad(`leaf ${expected} has no 32-byte hash`, expected);
      const hash = batch.hashes.subarray(i * 32, i * 32 + 32);
      leaves.set(hash, (expected - fromLeaf) * 32);
      if (builder) {
        builder.push(Buffer.from(hash.buffer, hash.byteOffset, 32));
        const check = options.rootsAt?.get(builder.size);
        if (check && !builder.root().equals(check.root)) {
          if (!firstBad && !displaced) return bad(`the events up to leaf ${builder.size - 1} do not give the root of ${check.name}`, builder.size - 1);
        }
      }
      expected++;
    }
  }
  if (displaced) {
    const { leaf, recorded, found } = displaced;
    if (!displaced.foundHasLeaf) return bad(`event ${found} (at leaf ${leaf}) has no leaf of its own: it was inserted after the fact`, leaf, found);
    if (!displaced.recordedStillThere) return bad(`event ${recorded} (leaf ${leaf}) is missing from the ledger: it was deleted`, leaf, recorded);
    return bad(`event ${recorded} (leaf ${leaf}) is no longer in its place; event ${found} is there: the ledger's order was changed`, leaf, recorded);
  }
  if (firstBad) return firstBad;
  if (expected < toLeaf) return bad(`the file ends at leaf ${expected}, before leaf ${toLeaf}: it was cut short`, expected);

  const outside = new Map(header.outside.map(([start, end, hash]) => [`${start}-${end}`, Buffer.from(hash, 'hex')]));
  let missingOutside: Range | undefined;
  // The builder already holds the whole tree when the file does: no second pass over a million leaves.
  const root = builder && toLeaf === checkpoint.treeSize ? builder.root() : rootOver(checkpoint.treeSize, fromLeaf, toLeaf, (start) => leaves.subarray((start - fromLeaf) * 32, (start - fromLeaf) * 32 + 32), (start, end) => {
    const hash = outside.get(`${start}-${end}`);
    if (!hash) {
      missingOutside ??= [start, end];
      return Buffer.alloc(32);
    }
    return hash;
  });
  if (missingOutside) return bad(`the file lacks the hash of leaves [${missingOutside[0]}, ${missingOutside[1]})`);
  if (!root.equals(checkpoint.rootHash)) {
    return bad(`the exported events do not give the signed root of the tree of ${checkpoint.treeSize}: an event was changed, removed or added`);
  }
  const summary =
    `ok: ${events} events (leaves ${fromLeaf}..${toLeaf - 1}${archived > 0 ? `, ${archived} archived leaves taken from the tree` : ''}) ` +
    `in ${checkpoint.origin} at size ${checkpoint.treeSize}, root ${checkpoint.rootHash.toString('base64')}` +
    (options.since !== undefined ? ', consistent with the --since checkpoint' : '');
  return { ok: true, summary, treeSize: checkpoint.treeSize, events, archived, checkpoint };
}

/**
 * MTH of a tree of `size` leaves of which [from, to) are known (`leaf`) and every subtree entirely outside that
 * range is given (`outside`). The RFC 9162 recursion: `rangesOutside` lists exactly what it asks for.
 */
export function rootOver(
  size: number,
  from: number,
  to: number,
  leaf: (index: number, end: number) => Buffer,
  outside: (start: number, end: number) => Buffer,
): Buffer {
  const walk = (start: number, end: number): Buffer => {
    if (end <= from || start >= to) return outside(start, end);
    if (end - start === 1) return leaf(start, end);
    const k = largestPowerOfTwoBelow(end - start);
    return hashChildren(walk(start, start + k), walk(start + k, end));
  };
  if (size === 0) return Buffer.from('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'hex');
  return walk(0, size);
}

/** The subtrees outside [from, to) that the root of a tree of `size` needs (what an export carries). */
export function rangesOutside(size: number, from: number, to: number): Range[] {
  const ranges: Range[] = [];
  const walk = (start: number, end: number): void => {
    if (end <= from || start >= to) {
      ranges.push([start, end]);
      return;
    }
    if (end - start === 1) return;
    const k = largestPowerOfTwoBelow(end - start);
    walk(start, start + k);
    walk(start + k, end);
  };
  if (size > 0) walk(0, size);
  return ranges;
}
