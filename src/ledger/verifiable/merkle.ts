// RFC 9162 section 2.1 Merkle trees: the tree hash, inclusion and consistency proofs and their verification.
// SHA-256 from node:crypto; indices and sizes are JavaScript numbers (safe integers: 2^53 leaves is far past
// any ledger), and every halving is a division, never a 32-bit shift.
import { createHash, hash as oneShotHash } from 'node:crypto';

export const HASH_BYTES = 32;
const LEAF_PREFIX = Buffer.from([0x00]);
const NODE_PREFIX = Buffer.from([0x01]);

/** MTH({}) = SHA-256() */
export const EMPTY_TREE_HASH: Buffer = createHash('sha256').digest();

/** MTH({d}) = SHA-256(0x00 || d) */
export function hashLeaf(leaf: Uint8Array): Buffer {
  return oneShotHash('sha256', Buffer.concat([LEAF_PREFIX, leaf]), 'buffer');
}

/** SHA-256(0x00 || UTF-8 of `text`): the leaf hash of text, without a copy of its bytes first. */
export function hashLeafText(text: string): Buffer {
  // U+0000 is the single byte 0x00 in UTF-8.
  return oneShotHash('sha256', `\u0000${text}`, 'buffer');
}

/** SHA-256(0x01 || left || right); node:crypto's one-shot hash costs about half a Hash object's on the verifier's path. */
export function hashChildren(left: Uint8Array, right: Uint8Array): Buffer {
  return oneShotHash('sha256', Buffer.concat([NODE_PREFIX, left, right]), 'buffer');
}

/** The largest power of two smaller than n (n > 1). */
export function largestPowerOfTwoBelow(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && largestPowerOfTwoBelow(n + 1) === n;
}

/**
 * A stored subtree: the full, aligned subtree of 2^level leaves starting at leaf index * 2^level. Level 0 is
 * a leaf hash. A tree kept as leaves are appended stores exactly these (each once it is complete).
 */
export interface NodeId {
  level: number;
  index: number;
}

/** Reads stored full subtrees; a proof asks for the ones `nodesForRanges` lists. */
export type NodeReader = (level: number, index: number) => Buffer;

/**
 * The full aligned subtrees that make up [start, end), largest first. Every range an RFC 9162 proof names
 * starts on a multiple of its own largest power of two, so this is the right-edge decomposition:
 * MTH(D[start:end]) = H(a1, H(a2, ... H(a_{k-1}, a_k))).
 */
export function fullSubtrees(start: number, end: number): NodeId[] {
  const nodes: NodeId[] = [];
  let at = start;
  while (at < end) {
    let size = 1;
    let level = 0;
    // The largest power of two that fits in what is left and to which `at` is aligned.
    while (at % (size * 2) === 0 && at + size * 2 <= end) {
      size *= 2;
      level++;
    }
    nodes.push({ level, index: at / size });
    at += size;
  }
  return nodes;
}

/** MTH(D[start:end]) from stored full subtrees. */
export function rangeHash(start: number, end: number, node: NodeReader): Buffer {
  if (end <= start) return EMPTY_TREE_HASH;
  const parts = fullSubtrees(start, end);
  let hash = node(parts.at(-1)!.level, parts.at(-1)!.index);
  for (let i = parts.length - 2; i >= 0; i--) hash = hashChildren(node(parts[i]!.level, parts[i]!.index), hash);
  return hash;
}

/** A range [start, end) of leaves whose tree hash is one element of a proof. */
export type Range = readonly [start: number, end: number];

/** RFC 9162 2.1.3.1 PATH(m, D[n]) as the ranges whose hashes it lists, leaf to root. */
export function inclusionProofRanges(leafIndex: number, treeSize: number): Range[] {
  checkSize(treeSize);
  if (!Number.isSafeInteger(leafIndex) || leafIndex < 0 || leafIndex >= treeSize) {
    throw new RangeError(`leaf index ${leafIndex} is not in a tree of size ${treeSize}`);
  }
  const path: Range[] = [];
  const walk = (m: number, start: number, n: number) => {
    if (n <= 1) return;
    const k = largestPowerOfTwoBelow(n);
    if (m < k) {
      walk(m, start, k);
      path.push([start + k, start + n]);
    } else {
      walk(m - k, start + k, n - k);
      path.push([start, start + k]);
    }
  };
  walk(leafIndex, 0, treeSize);
  return path;
}

/** RFC 9162 2.1.4.1 PROOF(m, D[n]) as ranges; empty when m is 0 or m = n. */
export function consistencyProofRanges(fromSize: number, toSize: number): Range[] {
  checkSize(fromSize);
  checkSize(toSize);
  if (fromSize > toSize) throw new RangeError(`a consistency proof goes from a smaller tree: ${fromSize} > ${toSize}`);
  if (fromSize === 0 || fromSize === toSize) return [];
  const proof: Range[] = [];
  const subproof = (m: number, start: number, n: number, b: boolean) => {
    if (m === n) {
      if (!b) proof.push([start, start + n]);
      return;
    }
    const k = largestPowerOfTwoBelow(n);
    if (m <= k) {
      subproof(m, start, k, b);
      proof.push([start + k, start + n]);
    } else {
      subproof(m - k, start + k, n - k, false);
      proof.push([start, start + k]);
    }
  };
  subproof(fromSize, 0, toSize, true);
  return proof;
}

/** Every stored node that the hashes of `ranges` need: what to read before `rangeHash`. */
export function nodesForRanges(ranges: readonly Range[]): NodeId[] {
  return ranges.flatMap(([start, end]) => fullSubtrees(start, end));
}

export function inclusionProof(leafIndex: number, treeSize: number, node: NodeReader): Buffer[] {
  return inclusionProofRanges(leafIndex, treeSize).map(([start, end]) => rangeHash(start, end, node));
}

export function consistencyProof(fromSize: number, toSize: number, node: NodeReader): Buffer[] {
  return consistencyProofRanges(fromSize, toSize).map(([start, end]) => rangeHash(start, end, node));
}

/** A NodeReader over leaf hashes held in memory (tests, the offline verifier, small trees). */
export function memoryNodes(leafHashes: readonly Buffer[]): NodeReader {
  const levels: Buffer[][] = [[...leafHashes]];
  return (level, index) => {
    while (levels.length <= level) {
      const below = levels.at(-1)!;
      const next: Buffer[] = [];
      for (let i = 0; i + 1 < below.length; i += 2) next.push(hashChildren(below[i]!, below[i + 1]!));
      levels.push(next);
    }
    const hash = levels[level]![index];
    if (!hash) throw new RangeError(`no complete subtree at level ${level}, index ${index}`);
    return hash;
  };
}

/** MTH of the leaf hashes, with O(log n) memory: the stack of complete subtrees so far. */
export class TreeBuilder {
  /** Complete subtrees on the right edge, largest first, with their levels. */
  private readonly stack: { level: number; hash: Buffer }[] = [];
  size = 0;

  push(leafHash: Buffer): void {
    let hash = leafHash;
    let level = 0;
    while (this.stack.length > 0 && this.stack.at(-1)!.level === level) {
      hash = hashChildren(this.stack.pop()!.hash, hash);
      level++;
    }
    this.stack.push({ level, hash });
    this.size++;
  }

  root(): Buffer {
    if (this.stack.length === 0) return EMPTY_TREE_HASH;
    let hash = this.stack.at(-1)!.hash;
    for (let i = this.stack.length - 2; i >= 0; i--) hash = hashChildren(this.stack[i]!.hash, hash);
    return hash;
  }
}

export function rootOfLeaves(leafHashes: Iterable<Buffer>): Buffer {
  const builder = new TreeBuilder();
  for (const leaf of leafHashes) builder.push(leaf);
  return builder.root();
}

/** RFC 9162 2.1.3.2. True when `proof` shows the leaf hash at `leafIndex` in the tree of `treeSize` with `root`. */
export function verifyInclusion(leafIndex: number, treeSize: number, leafHash: Uint8Array, proof: readonly Uint8Array[], root: Uint8Array): boolean {
  if (!Number.isSafeInteger(leafIndex) || !Number.isSafeInteger(treeSize) || leafIndex < 0 || leafIndex >= treeSize) return false;
  let fn = leafIndex;
  let sn = treeSize - 1;
  let r: Buffer = Buffer.from(leafHash);
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = hashChildren(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = hashChildren(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}

/** RFC 9162 2.1.4.2. True when `proof` shows the tree of `toSize` with `toRoot` extends the one of `fromSize` with `fromRoot`. */
export function verifyConsistency(
  fromSize: number,
  toSize: number,
  fromRoot: Uint8Array,
  toRoot: Uint8Array,
  proof: readonly Uint8Array[],
): boolean {
  if (!Number.isSafeInteger(fromSize) || !Number.isSafeInteger(toSize) || fromSize < 0 || fromSize > toSize) return false;
  if (fromSize === toSize) return proof.length === 0 && Buffer.from(fromRoot).equals(toRoot);
  // Every tree extends the empty one; there is nothing to prove.
  if (fromSize === 0) return proof.length === 0;
  if (proof.length === 0) return false;
  const path = isPowerOfTwo(fromSize) ? [fromRoot, ...proof] : [...proof];
  let fn = fromSize - 1;
  let sn = toSize - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr: Buffer = Buffer.from(path[0]!);
  let sr: Buffer = Buffer.from(path[0]!);
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = hashChildren(c, fr);
      sr = hashChildren(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = hashChildren(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return fr.equals(fromRoot) && sr.equals(toRoot) && sn === 0;
}

function checkSize(size: number) {
  if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`a tree size is a whole number >= 0, got ${size}`);
}
