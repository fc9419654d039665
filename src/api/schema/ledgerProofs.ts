// The verifiable ledger for auditors (docs/verifiable-ledger.md): the latest signed checkpoint, and RFC 9162
// inclusion and consistency proofs against it. Sizes and indexes are decimal strings: a ledger may outgrow
// GraphQL's 32-bit Int. Hashes are standard base64, as in the checkpoint.
import { builder } from '../builder.ts';
import { GraphQLError } from '../graphql.ts';
import { canReadEverything } from '../../auth/index.ts';
import { Forbidden } from './errorClasses.ts';
import {
  checkpointAtOrBelow,
  findLeaf,
  latestCheckpoint,
  readTreeHead,
  storedConsistencyProof,
  storedInclusionProof,
  type SignedCheckpoint,
} from '../../ledger/index.ts';
import type { Queryable } from '../../db/db.ts';

interface InclusionProof {
  eventId: string;
  leafIndex: number;
  treeSize: number;
  leafHash: Buffer;
  hashes: Buffer[];
  checkpoint: SignedCheckpoint | undefined;
}

interface ConsistencyProof {
  fromSize: number;
  toSize: number;
  hashes: Buffer[];
  fromCheckpoint: SignedCheckpoint | undefined;
  toCheckpoint: SignedCheckpoint | undefined;
}

const LedgerCheckpointType = builder.objectRef<SignedCheckpoint>('LedgerCheckpoint').implement({
  description: "A signed checkpoint of the ledger's Merkle tree: a C2SP tlog-checkpoint signed as a C2SP signed-note (Ed25519).",
  fields: (t) => ({
    treeSize: t.string({ description: 'Leaves (events in the global order) the tree holds, in decimal.', resolve: (c) => String(c.treeSize) }),
    rootHash: t.string({ description: 'The RFC 9162 root hash, standard base64.', resolve: (c) => c.rootHash.toString('base64') }),
    note: t.exposeString('note', { description: 'The signed note as it was signed: verify it with the verifier key.' }),
    verifierKey: t.exposeString('verifierKey', { description: 'The signer\'s verifier key (vkey: <name>+<key id>+<base64 key>). Check it against the one published out of band.' }),
    signedAt: t.field({ type: 'DateTime', resolve: (c) => c.signedAt }),
  }),
});

const LedgerInclusionProofType = builder.objectRef<InclusionProof>('LedgerInclusionProof').implement({
  description: "An RFC 9162 inclusion proof of one event's leaf in the tree of treeSize leaves.",
  fields: (t) => ({
    eventId: t.exposeID('eventId'),
    leafIndex: t.string({ resolve: (p) => String(p.leafIndex) }),
    treeSize: t.string({ resolve: (p) => String(p.treeSize) }),
    leafHash: t.string({ description: 'SHA-256(0x00 || the canonical leaf), base64.', resolve: (p) => p.leafHash.toString('base64') }),
    hashes: t.stringList({ description: 'The audit path, leaf to root, base64.', resolve: (p) => p.hashes.map((hash) => hash.toString('base64')) }),
    checkpoint: t.field({ type: LedgerCheckpointType, nullable: true, description: 'The signed checkpoint of this tree size, when one was signed.', resolve: (p) => p.checkpoint }),
  }),
});

const LedgerConsistencyProofType = builder.objectRef<ConsistencyProof>('LedgerConsistencyProof').implement({
  description: 'An RFC 9162 consistency proof: the tree of toSize leaves extends the tree of fromSize leaves.',
  fields: (t) => ({
    fromSize: t.string({ resolve: (p) => String(p.fromSize) }),
    toSize: t.string({ resolve: (p) => String(p.toSize) }),
    hashes: t.stringList({ description: 'The proof hashes, base64.', resolve: (p) => p.hashes.map((hash) => hash.toString('base64')) }),
    fromCheckpoint: t.field({ type: LedgerCheckpointType, nullable: true, resolve: (p) => p.fromCheckpoint }),
    toCheckpoint: t.field({ type: LedgerCheckpointType, nullable: true, resolve: (p) => p.toCheckpoint }),
  }),
});

function badSize(field: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', field } });
}

/** A tree size argument: a decimal within the stored tree; absent, the latest checkpoint's. */
async function treeSizeArg(db: Queryable, text: string | null | undefined, field: string): Promise<{ size: number; checkpoint: SignedCheckpoint | undefined }> {
  if (text === null || text === undefined) {
    const latest = await latestCheckpoint(db);
    if (!latest) throw badSize(field, 'no checkpoint has been signed yet: name a treeSize');
    return { size: latest.treeSize, checkpoint: latest };
  }
  if (!/^\d{1,16}$/.test(text) || !Number.isSafeInteger(Number(text))) throw badSize(field, `${field} must be a whole number in decimal`);
  const size = Number(text);
  const head = await readTreeHead(db);
  if (size > head.size) throw badSize(field, `${field} ${size} is past the tree's ${head.size} leaves`);
  const checkpoint = await checkpointAtOrBelow(db, size);
  return { size, checkpoint: checkpoint?.treeSize === size ? checkpoint : undefined };
}

const auditors = { authScopes: (_root: unknown, _args: unknown, { actor }: { actor: Parameters<typeof canReadEverything>[0] }) => canReadEverything(actor) };

builder.queryFields((t) => ({
  ledgerCheckpoint: t.field({
    type: LedgerCheckpointType,
    nullable: true,
    description: "The latest signed checkpoint of the ledger's Merkle tree (null until one is signed). AUDITOR and OPERATOR.",
    ...auditors,
    unauthorizedError: () => new Forbidden('ledgerCheckpoint is for AUDITOR and OPERATOR'),
    resolve: async (_root, _args, context) => (await latestCheckpoint(context.db)) ?? null,
  }),
  ledgerInclusionProof: t.field({
    type: LedgerInclusionProofType,
    nullable: true,
    description:
      "An inclusion proof of the event's leaf in the tree of treeSize leaves (default: the latest checkpoint's); null when the event " +
      'has no leaf in that tree (not yet added, or not in the ledger). AUDITOR and OPERATOR.',
    args: { eventId: t.arg.id({ required: true }), treeSize: t.arg.string() },
    ...auditors,
    unauthorizedError: () => new Forbidden('ledgerInclusionProof is for AUDITOR and OPERATOR'),
    resolve: async (_root, args, context) => {
      const eventId = String(args.eventId);
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(eventId)) throw badSize('eventId', 'eventId must be an event id (a uuid)');
      const { size, checkpoint } = await treeSizeArg(context.db, args.treeSize, 'treeSize');
      const leaf = await findLeaf(context.db, eventId);
      if (!leaf || leaf.leafIndex >= size) return null;
      const hashes = await storedInclusionProof(context.db, leaf.leafIndex, size);
      return { eventId: leaf.eventId, leafIndex: leaf.leafIndex, treeSize: size, leafHash: leaf.hash, hashes, checkpoint };
    },
  }),
  ledgerConsistencyProof: t.field({
    type: LedgerConsistencyProofType,
    description: 'A consistency proof from the tree of fromSize leaves to the tree of toSize leaves (default: the latest checkpoint\'s). AUDITOR and OPERATOR.',
    args: { fromSize: t.arg.string({ required: true }), toSize: t.arg.string() },
    ...auditors,
    unauthorizedError: () => new Forbidden('ledgerConsistencyProof is for AUDITOR and OPERATOR'),
    resolve: async (_root, args, context) => {
      const to = await treeSizeArg(context.db, args.toSize, 'toSize');
      const from = await treeSizeArg(context.db, args.fromSize, 'fromSize');
      if (from.size > to.size) throw badSize('fromSize', `fromSize ${from.size} is past toSize ${to.size}`);
      const hashes = await storedConsistencyProof(context.db, from.size, to.size);
      return { fromSize: from.size, toSize: to.size, hashes, fromCheckpoint: from.checkpoint, toCheckpoint: to.checkpoint };
    },
  }),
}));
