// Signed checkpoints: every GOVERNANCE_CHECKPOINT_SECONDS while the tree grew, the tree's size and root as a
// C2SP tlog-checkpoint, signed as a C2SP signed-note, recorded in gl_merkle_checkpoints and handed to
// GOVERNANCE_CHECKPOINT_COMMAND (run by /bin/sh with the checkpoint file as $1, as the archive command is).
import { execFile } from 'node:child_process';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Db, Queryable } from '../../db/db.ts';
import { formatCheckpoint, formatVerifierKey, signNote, type SignerKey } from './signedNote.ts';
import { readTreeHead, storedRoot } from './treeStore.ts';

const run = promisify(execFile);

export interface SignedCheckpoint {
  treeSize: number;
  rootHash: Buffer;
  /** The signed note, as recorded and handed on. */
  note: string;
  verifierKey: string;
  signedAt: Date;
}

interface CheckpointRow {
  tree_size: string;
  root_hash: string;
  note: string;
  verifier_key: string;
  signed_at: Date;
}

const toCheckpoint = (row: CheckpointRow): SignedCheckpoint => ({
  treeSize: Number(row.tree_size),
  rootHash: Buffer.from(row.root_hash, 'hex'),
  note: row.note,
  verifierKey: row.verifier_key,
  signedAt: new Date(row.signed_at),
});

const CHECKPOINT_COLUMNS = "c.tree_size::text AS tree_size, encode(c.root_hash, 'hex') AS root_hash, c.note, c.verifier_key, c.signed_at";

export async function latestCheckpoint(db: Queryable): Promise<SignedCheckpoint | undefined> {
  const { rows } = await db.query<CheckpointRow>(`SELECT ${CHECKPOINT_COLUMNS} FROM gl_merkle_checkpoints c ORDER BY c.tree_size DESC LIMIT 1`);
  return rows[0] ? toCheckpoint(rows[0]) : undefined;
}

export async function listCheckpoints(db: Queryable): Promise<SignedCheckpoint[]> {
  const { rows } = await db.query<CheckpointRow>(`SELECT ${CHECKPOINT_COLUMNS} FROM gl_merkle_checkpoints c ORDER BY c.tree_size`);
  return rows.map(toCheckpoint);
}

/** The latest checkpoint at or below `treeSize`. */
export async function checkpointAtOrBelow(db: Queryable, treeSize: number): Promise<SignedCheckpoint | undefined> {
  const { rows } = await db.query<CheckpointRow>(
    `SELECT ${CHECKPOINT_COLUMNS} FROM gl_merkle_checkpoints c WHERE c.tree_size <= $1 ORDER BY c.tree_size DESC LIMIT 1`,
    [String(treeSize)],
  );
  return rows[0] ? toCheckpoint(rows[0]) : undefined;
}

/**
 * Signs the tree as it stands, unless its size was signed already. The root is read from the stored nodes;
 * one checkpoint per size (the primary key), so two replicas signing the same size keep the first.
 */
export async function signCheckpoint(db: Db, key: SignerKey): Promise<SignedCheckpoint | undefined> {
  const head = await readTreeHead(db);
  const latest = await latestCheckpoint(db);
  if (latest && latest.treeSize >= head.size) return undefined;
  const rootHash = await storedRoot(db, head.size);
  const note = signNote(formatCheckpoint({ origin: key.name, treeSize: head.size, rootHash }), key);
  const verifierKey = formatVerifierKey(key);
  const { rows } = await db.query<CheckpointRow>(
    `INSERT INTO gl_merkle_checkpoints (tree_size, root_hash, note, verifier_key) VALUES ($1, decode($2, 'hex'), $3, $4)
     ON CONFLICT (tree_size) DO NOTHING RETURNING tree_size::text AS tree_size, encode(root_hash, 'hex') AS root_hash, note, verifier_key, signed_at`,
    [String(head.size), rootHash.toString('hex'), note, verifierKey],
  );
  return rows[0] ? toCheckpoint(rows[0]) : undefined;
}

/** Writes the checkpoint to `<dir>/checkpoint-<size>.txt` (whole or not at all) and runs the command on it. */
export async function deliverCheckpoint(db: Queryable, checkpoint: SignedCheckpoint, dir: string, command: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `checkpoint-${checkpoint.treeSize}.txt`);
  await writeFile(`${file}.tmp`, checkpoint.note);
  await rename(`${file}.tmp`, file);
  await run('/bin/sh', ['-c', command, 'governance-ledger-checkpoint', file], {
    env: { ...process.env, GOVERNANCE_CHECKPOINT_FILE: file, GOVERNANCE_CHECKPOINT_TREE_SIZE: String(checkpoint.treeSize) },
    timeout: 60_000,
  });
  await db.query('UPDATE gl_merkle_checkpoints SET delivered_at = now() WHERE tree_size = $1', [String(checkpoint.treeSize)]);
  return file;
}

export interface CheckpointerOptions {
  /** GOVERNANCE_CHECKPOINT_SECONDS. */
  intervalMs: number;
  /** GOVERNANCE_CHECKPOINT_COMMAND. */
  command?: string | undefined;
  /** Where checkpoint files are written for the command: <GOVERNANCE_DATA_DIR>/ledger-checkpoints. */
  dir: string;
  /** Brings the tree up to the ledger before signing (the follower's catchUp). */
  catchUp?: () => Promise<unknown>;
  onSigned?: (checkpoint: SignedCheckpoint) => void;
  onDelivered?: (checkpoint: SignedCheckpoint, file: string) => void;
  onError?: (error: unknown, step: 'sign' | 'deliver') => void;
}

export interface Checkpointer {
  /** Signs now if the tree grew, and hands on every checkpoint not yet delivered. */
  runOnce(): Promise<SignedCheckpoint | undefined>;
  close(): Promise<void>;
}

export function startCheckpointer(db: Db, key: SignerKey, options: CheckpointerOptions): Checkpointer {
  let closed = false;
  let running: Promise<SignedCheckpoint | undefined> = Promise.resolve(undefined);
  const pass = async (): Promise<SignedCheckpoint | undefined> => {
    if (closed) return undefined;
    let signed: SignedCheckpoint | undefined;
    try {
      await options.catchUp?.();
      signed = await signCheckpoint(db, key);
      if (signed) options.onSigned?.(signed);
    } catch (error) {
      options.onError?.(error, 'sign');
    }
    if (options.command) {
      // Oldest first; one that fails stays undelivered and is tried again at the next pass.
      try {
        const { rows } = await db.query<CheckpointRow>(
          `SELECT ${CHECKPOINT_COLUMNS} FROM gl_merkle_checkpoints c WHERE c.delivered_at IS NULL ORDER BY c.tree_size LIMIT 100`,
        );
        for (const row of rows) {
          if (closed) break;
          const checkpoint = toCheckpoint(row);
          const file = await deliverCheckpoint(db, checkpoint, options.dir, options.command);
          options.onDelivered?.(checkpoint, file);
        }
      } catch (error) {
        options.onError?.(error, 'deliver');
      }
    }
    return signed;
  };
  const runOnce = () => (running = running.then(pass));
  const timer = setInterval(() => void runOnce(), options.intervalMs);
  timer.unref();
  return {
    runOnce,
    async close() {
      clearInterval(timer);
      await running;
      closed = true;
    },
  };
}
