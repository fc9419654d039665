import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  EMPTY_TREE_HASH,
  TreeBuilder,
  consistencyProof,
  hashChildren,
  hashLeaf,
  inclusionProof,
  memoryNodes,
  rangeHash,
  rootOfLeaves,
  verifyConsistency,
  verifyInclusion,
} from '../../../../src/ledger/verifiable/index.ts';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const unhex = (text: string) => Buffer.from(text, 'hex');

// The Certificate Transparency reference leaves and tree heads (RFC 6962; transparency-dev/merkle's testonly
// constants): a log nobody else agrees with proves nothing to anyone.
const CT_LEAVES = ['', '00', '10', '2021', '3031', '40414243', '5051525354555657', '606162636465666768696a6b6c6d6e6f'].map((leaf) => hashLeaf(unhex(leaf)));
const CT_ROOTS = [
  'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];
const CT_INCLUSION = [
  { index: 0, size: 8, proof: ['96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7', '5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4'] },
  { index: 5, size: 8, proof: ['bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7'] },
];
const CT_CONSISTENCY = [
  { from: 2, to: 8, proof: ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', '6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4'] },
  { from: 6, to: 8, proof: ['0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a', 'ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0', 'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7'] },
  { from: 2, to: 5, proof: ['5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e', 'bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b'] },
];

describe('RFC 9162 Merkle tree', () => {
  it('hashes the empty tree, leaves and nodes with the standard prefixes', () => {
    expect(hex(EMPTY_TREE_HASH)).toBe(createHash('sha256').digest('hex'));
    expect(hex(hashLeaf(Buffer.from('x')))).toBe(createHash('sha256').update(Buffer.from([0x00])).update('x').digest('hex'));
    const [a, b] = [hashLeaf(Buffer.from('a')), hashLeaf(Buffer.from('b'))];
    expect(hex(hashChildren(a, b))).toBe(createHash('sha256').update(Buffer.from([0x01])).update(a).update(b).digest('hex'));
  });

  it('gives the Certificate Transparency reference roots for sizes 0..8', () => {
    for (let n = 0; n <= 8; n++) {
      expect(hex(rootOfLeaves(CT_LEAVES.slice(0, n))), `size ${n}`).toBe(CT_ROOTS[n]);
      if (n > 0) expect(hex(rangeHash(0, n, memoryNodes(CT_LEAVES))), `size ${n} from stored nodes`).toBe(CT_ROOTS[n]);
    }
  });

  it('gives and verifies the reference inclusion and consistency proofs', () => {
    const nodes = memoryNodes(CT_LEAVES);
    for (const vector of CT_INCLUSION) {
      expect(inclusionProof(vector.index, vector.size, nodes).map(hex)).toEqual(vector.proof);
      expect(verifyInclusion(vector.index, vector.size, CT_LEAVES[vector.index]!, vector.proof.map(unhex), unhex(CT_ROOTS[vector.size]!))).toBe(true);
    }
    for (const vector of CT_CONSISTENCY) {
      expect(consistencyProof(vector.from, vector.to, nodes).map(hex)).toEqual(vector.proof);
      expect(verifyConsistency(vector.from, vector.to, unhex(CT_ROOTS[vector.from]!), unhex(CT_ROOTS[vector.to]!), vector.proof.map(unhex))).toBe(true);
    }
  });

  // Every tree shape up to 64 leaves, every leaf and every pair of sizes: each honest proof verifies, and each
  // proof changed in any of the ways a forger could try is refused. (A proof does not bind the tree size by
  // itself: leaf 0's proof in a tree of 3 also checks out as one in a tree of 4 against the same root. The
  // size is bound by the signed checkpoint that carries it with the root.)
  const N = 64;
  const leaves = Array.from({ length: N }, (_, i) => hashLeaf(Buffer.from(`leaf ${i}`)));
  const nodes = memoryNodes(leaves);
  const roots = Array.from({ length: N + 1 }, (_, n) => rootOfLeaves(leaves.slice(0, n)));
  const flip = (proof: Buffer[], at: number) => proof.map((hash, i) => (i === at ? Buffer.from(hash.map((byte, j) => (j === 0 ? byte ^ 1 : byte))) : hash));

  it('verifies every inclusion proof in trees of 1..64 leaves and refuses every tampered one', () => {
    let verified = 0;
    let refused = 0;
    for (let n = 1; n <= N; n++) {
      for (let m = 0; m < n; m++) {
        const proof = inclusionProof(m, n, nodes);
        expect(verifyInclusion(m, n, leaves[m]!, proof, roots[n]!), `${m} in ${n}`).toBe(true);
        verified++;
        const forgeries: [string, boolean][] = [
          ['other leaf', verifyInclusion(m, n, leaves[(m + 1) % N]!, proof, roots[n]!)],
          ['other index', n > 1 && verifyInclusion((m + 1) % n, n, leaves[m]!, proof, roots[n]!)],
          ['other root', verifyInclusion(m, n, leaves[m]!, proof, roots[n - 1]!)],
          ['extended', verifyInclusion(m, n, leaves[m]!, [...proof, leaves[0]!], roots[n]!)],
          ['index past the size', verifyInclusion(n, n, leaves[m]!, proof, roots[n]!)],
        ];
        if (proof.length > 0) forgeries.push(['shortened', verifyInclusion(m, n, leaves[m]!, proof.slice(0, -1), roots[n]!)]);
        for (let at = 0; at < proof.length; at++) forgeries.push([`hash ${at} changed`, verifyInclusion(m, n, leaves[m]!, flip(proof, at), roots[n]!)]);
        for (const [what, accepted] of forgeries) {
          expect(accepted, `${what}: ${m} in ${n}`).toBe(false);
          refused++;
        }
      }
    }
    console.log(`inclusion: ${verified} proofs verified, ${refused} tampered ones refused`);
    expect(verified).toBe((N * (N + 1)) / 2);
  });

  it('verifies every consistency proof between sizes 0..64 and refuses every tampered one', () => {
    let verified = 0;
    let refused = 0;
    for (let n = 0; n <= N; n++) {
      for (let m = 0; m <= n; m++) {
        const proof = consistencyProof(m, n, nodes);
        expect(verifyConsistency(m, n, roots[m]!, roots[n]!, proof), `${m} to ${n}`).toBe(true);
        verified++;
        if (m === 0) continue;
        const forgeries: [string, boolean][] = [
          ['other old root', verifyConsistency(m, n, roots[m - 1]!, roots[n]!, proof)],
          ['extended', verifyConsistency(m, n, roots[m]!, roots[n]!, [...proof, leaves[0]!])],
        ];
        if (m < n) {
          forgeries.push(['other new root', verifyConsistency(m, n, roots[m]!, roots[n - 1]!, proof)]);
          forgeries.push(['shortened', verifyConsistency(m, n, roots[m]!, roots[n]!, proof.slice(0, -1))]);
          forgeries.push(['sizes swapped', verifyConsistency(n, m, roots[n]!, roots[m]!, proof)]);
          for (let at = 0; at < proof.length; at++) forgeries.push([`hash ${at} changed`, verifyConsistency(m, n, roots[m]!, roots[n]!, flip(proof, at))]);
        }
        for (const [what, accepted] of forgeries) {
          expect(accepted, `${what}: ${m} to ${n}`).toBe(false);
          refused++;
        }
      }
    }
    console.log(`consistency: ${verified} proofs verified, ${refused} tampered ones refused`);
    expect(verified).toBe(((N + 1) * (N + 2)) / 2);
  });

  it('builds the same root incrementally as from stored nodes', () => {
    const builder = new TreeBuilder();
    for (let n = 1; n <= N; n++) {
      builder.push(leaves[n - 1]!);
      expect(hex(builder.root())).toBe(hex(roots[n]!));
      expect(hex(rangeHash(0, n, nodes))).toBe(hex(roots[n]!));
    }
  });
});
