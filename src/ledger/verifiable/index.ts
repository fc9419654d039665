// The verifiable ledger's surface: RFC 9162 Merkle trees over the ledger's global order, the canonical leaf of
// an event, C2SP signed checkpoints, the tree kept in PostgreSQL/PGlite, export and verification.
export * from './merkle.ts';
export * from './leaf.ts';
export * from './signedNote.ts';
export * from './treeStore.ts';
export * from './treeFollower.ts';
export * from './signingKey.ts';
export * from './checkpointer.ts';
export * from './verify.ts';
export * from './exportLedger.ts';
export * from './archiveProofs.ts';
export * from './eventRefs.ts';
export { defaultLeafHashers } from './leafHashers.ts';
export * from './startVerifiableLedger.ts';
export * from './commands.ts';
export * from './portTree.ts';
export * from './portExport.ts';
