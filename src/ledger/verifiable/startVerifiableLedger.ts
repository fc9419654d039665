// The service's verifiable ledger: the tree follower (over the PostgreSQL/PGlite ledger, or with `ledger`
// over EventStoreDB through the EventStore port, the tree beside the read models), a signed checkpoint every
// GOVERNANCE_CHECKPOINT_SECONDS while the tree grew, handed to GOVERNANCE_CHECKPOINT_COMMAND, and a verify of the
// stored ledger every GOVERNANCE_LEDGER_VERIFY_SECONDS. Nothing here can stop the service or an append: every
// failure is reported and tried again at the next pass.
import path from 'node:path';
import type { Db, Queryable } from '../../db/db.ts';
import type { EventStore } from '../eventStore.ts';
import { startCheckpointer, type SignedCheckpoint } from './checkpointer.ts';
import { verifyStoredLedger } from './exportLedger.ts';
import { formatVerifierKey, type SignerKey } from './signedNote.ts';
import { defaultOrigin, loadSigningKey } from './signingKey.ts';
import { startMerkleTree, type MerkleTree } from './treeFollower.ts';
import type { Verdict } from './verify.ts';

export interface VerifiableLedgerOptions {
  /** The ledger when its events are not in `db` (EVENTSTORE_URL): the tree follows it through the port. */
  ledger?: EventStore | undefined;
  dataDir: string;
  checkpointSeconds: number;
  checkpointCommand?: string | undefined;
  signingKey?: string | undefined;
  origin?: string | undefined;
  /** 0: never. */
  verifySeconds: number;
  onError?: (error: unknown, step: string) => void;
  onSigned?: (checkpoint: SignedCheckpoint) => void;
  onDelivered?: (checkpoint: SignedCheckpoint, file: string) => void;
  /** A verify found the ledger altered: the service logs it and counts it; serving goes on. */
  onVerificationFailed?: (verdict: Extract<Verdict, { ok: false }>) => void;
  onVerified?: (verdict: Extract<Verdict, { ok: true }>) => void;
}

export interface VerifiableLedger {
  key: SignerKey;
  /** The verifier key (vkey) auditors check checkpoints with. */
  verifierKey: string;
  tree: MerkleTree;
  /** Signs a checkpoint of the tree as the follower has it now. */
  checkpointNow(): Promise<SignedCheckpoint | undefined>;
  verifyNow(): Promise<Verdict>;
  close(): Promise<void>;
}

/**
 * The ledger's origin: GOVERNANCE_LEDGER_ORIGIN, else named by the ledger's identity (migration 0090; on
 * EventStoreDB the id its adapter keeps in the server, src/ledger/eventstoredb/eventStoreDb.ts).
 */
export async function ledgerOrigin(db: Queryable, configured: string | undefined, ledger?: EventStore): Promise<string> {
  if (configured) return configured;
  if (ledger) return defaultOrigin((await ledger.identity()).id);
  const { rows } = await db.query<{ id: string }>('SELECT id::text AS id FROM gl_ledger_identity');
  return defaultOrigin(rows[0]!.id);
}

export async function startVerifiableLedger(db: Db, options: VerifiableLedgerOptions): Promise<VerifiableLedger> {
  const { ledger } = options;
  const origin = await ledgerOrigin(db, options.origin, ledger);
  const key = await loadSigningKey({ signingKey: options.signingKey, dataDir: options.dataDir, origin });
  const tree = startMerkleTree(db, { ...(ledger ? { ledger } : {}), onError: (error) => options.onError?.(error, 'tree') });
  const checkpointer = startCheckpointer(db, key, {
    intervalMs: options.checkpointSeconds * 1000,
    command: options.checkpointCommand,
    dir: path.join(options.dataDir, 'ledger-checkpoints'),
    // Signs what the follower has added: catching up here would run pages back to back and take the time the
    // follower's busyShare leaves to appends.
    onSigned: options.onSigned,
    onDelivered: options.onDelivered,
    onError: (error, step) => options.onError?.(error, `checkpoint ${step}`),
  });

  let verifying: Promise<Verdict> | undefined;
  const verifyNow = () =>
    (verifying ??= verifyStoredLedger(db, key, ledger)
      .then((verdict) => {
        if (verdict.ok) options.onVerified?.(verdict);
        else if (verdict.reason !== 'no checkpoint has been signed yet') options.onVerificationFailed?.(verdict);
        return verdict;
      })
      .finally(() => (verifying = undefined)));
  const verifyTimer =
    options.verifySeconds > 0
      ? setInterval(() => void verifyNow().catch((error: unknown) => options.onError?.(error, 'verify')), options.verifySeconds * 1000)
      : undefined;
  verifyTimer?.unref();

  return {
    key,
    verifierKey: formatVerifierKey(key),
    tree,
    checkpointNow: () => checkpointer.runOnce(),
    verifyNow,
    async close() {
      if (verifyTimer) clearInterval(verifyTimer);
      await checkpointer.close();
      await tree.close();
      await verifying?.catch(() => undefined);
    },
  };
}
