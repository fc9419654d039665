// What the verifiable ledger's suites set up alike (verifiableLedger, portMerkleTree and esdbMerkleTree tests):
// events appended over a few streams, the Merkle tree caught up with them and a checkpoint signed, an export as
// the lines of its file, and a superuser's edits of the stored ledger.
import { generateKeyPairSync } from 'node:crypto';
import { expect } from 'vitest';
import type { Db } from '../../src/db/db.ts';
import type { EventStore, NewEvent } from '../../src/ledger/eventStore.ts';
import { signCheckpoint, signerKey, startMerkleTree, type ExportLine, type SignerKey } from '../../src/ledger/verifiable/index.ts';
import { waitFor } from './waitFor.ts';

/**
 * Appends `count` LimitSet events in batches of five over three streams (`<streams>-0` to `-2`), with data that
 * jsonb reorders and normalises (keys out of order, a non-ASCII string, a large integer, a negative fraction).
 */
export async function appendSampleEvents(store: EventStore, count: number, streams: string): Promise<void> {
  for (let i = 0; i < count; i += 5) {
    await store.append(
      `${streams}-${i % 3}`,
      Array.from({ length: Math.min(5, count - i) }, (_, j): NewEvent => ({
        type: 'LimitSet',
        data: { z: i + j, a: { limit: 1.5, tags: ['x', 'é'] }, big: 12345678901234, neg: -0.25 },
        metadata: { actor: 'auditor-test', reason: `step ${i + j}` },
      })),
    );
  }
}

/**
 * Runs the Merkle tree on `db` (over `ledger` when given, the port's path) until it holds `count` leaves, then
 * signs a checkpoint with a new key for `origin`: resolves to the key.
 */
export async function signedTree(db: Db, count: number, options: { origin: string; ledger?: EventStore }): Promise<SignerKey> {
  const tree = startMerkleTree(db, { ...(options.ledger ? { ledger: options.ledger } : {}), paceMs: 0, pollMs: 200, pageSize: 7 });
  try {
    // On a shared server another session's open transaction holds every reader back (the xmin rule), so wait
    // for the tree to reach the events rather than expect one pass to.
    await waitFor(async () => (await tree.catchUp()).size === count, { timeoutMs: 60_000, description: `the tree to reach ${count} leaves` });
  } finally {
    await tree.close();
  }
  const key = signerKey(options.origin, generateKeyPairSync('ed25519').privateKey);
  expect(await signCheckpoint(db, key)).toBeDefined();
  return key;
}

/** An export's header and lines as the lines of its NDJSON file. */
export async function* ndjson(header: unknown, lines: AsyncIterable<ExportLine>): AsyncIterable<string> {
  yield JSON.stringify(header);
  for await (const line of lines) yield JSON.stringify(line);
}

/** Runs `statements` as a superuser can: the append-only trigger does not fire for the replication role. */
export async function asSuperuser(db: Db, statements: string[], params: unknown[][] = []): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('SET LOCAL session_replication_role = replica');
    for (const [i, sql] of statements.entries()) await tx.query(sql, params[i] ?? []);
  });
}
