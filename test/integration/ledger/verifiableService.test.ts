// The verifiable ledger as the service runs it: checkpoints signed while events are appended and handed to
// GOVERNANCE_CHECKPOINT_COMMAND, none while nothing is; a verify that reports an altered ledger; and the CLI
// (export, offline verify with only the public key, verify against the database, public-key).
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../support/spawnTs.ts';
import { postgresOnly, storageTargets, type TestDb } from '../../support/databases.ts';
import { waitFor } from '../../support/waitFor.ts';
import type { Db } from '../../../src/db/db.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { parseVerifierKey, startVerifiableLedger, verifyCheckpoint, type Verdict, type VerifiableLedger } from '../../../src/ledger/verifiable/index.ts';


async function append(db: Db, count: number): Promise<string[]> {
  const store = createPostgresEventStore(db, { pollIntervalMs: 250 });
  const ids = Array.from({ length: count }, () => randomUUID());
  try {
    await store.append(`tenant-${randomUUID()}`, ids.map((id, n) => ({ id, type: 'TenantRegistered', data: { n, name: `t${n}` }, metadata: { actor: 'test' } })));
  } finally {
    await store.close();
  }
  return ids;
}

describe.each(storageTargets)('the service\'s verifiable ledger on $name', (target) => {
  let opened: TestDb | undefined;
  let ledger: VerifiableLedger | undefined;
  let dataDir: string | undefined;
  afterEach(async () => {
    await ledger?.close();
    await opened?.dispose();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    ledger = opened = dataDir = undefined;
  });

  it('signs a checkpoint every GOVERNANCE_CHECKPOINT_SECONDS while events were appended, hands each to the command, and reports an altered ledger', async () => {
    opened = await target.open();
    const { db } = opened;
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-verifiable-'));
    const kept = path.join(dataDir, 'kept');
    const failures: Extract<Verdict, { ok: false }>[] = [];
    ledger = await startVerifiableLedger(db, {
      dataDir,
      checkpointSeconds: 1,
      // Copied beside the kept folder, then renamed into it: the test reads the folder while the command runs, and
      // a rename is whole where a cp is not (a half-copied checkpoint would not verify).
      checkpointCommand: `mkdir -p '${kept}' && cp "$1" '${kept}.part' && mv '${kept}.part' '${kept}'/"$(basename "$1")"`,
      verifySeconds: 0,
      onVerificationFailed: (verdict) => failures.push(verdict),
    });
    const key = parseVerifierKey(ledger.verifierKey);
    const keptSizes = async () => {
      const files = await readdir(kept).catch(() => [] as string[]);
      const sizes: number[] = [];
      for (const file of files) {
        const verdict = verifyCheckpoint(await readFile(path.join(kept, file), 'utf8'), key);
        expect(verdict.ok, file).toBe(true);
        if (verdict.ok) sizes.push(verdict.checkpoint.treeSize);
      }
      return sizes.sort((a, b) => a - b);
    };

    const ids = await append(db, 6);
    await waitFor(async () => (await keptSizes()).includes(6), { timeoutMs: 20_000, description: 'a checkpoint of the 6 events handed to the command' });
    await append(db, 4);
    await waitFor(async () => (await keptSizes()).includes(10), { timeoutMs: 20_000, description: 'a checkpoint of the 10 events handed to the command' });
    // Nothing appended: three more intervals pass without a new checkpoint.
    const before = await keptSizes();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await keptSizes()).toEqual(before);

    expect(await ledger.verifyNow()).toMatchObject({ ok: true, events: 10 });
    expect(failures).toEqual([]);
    await db.transaction(async (tx) => {
      await tx.query('SET LOCAL session_replication_role = replica');
      await tx.query(`UPDATE gl_events SET data = '{"n": 0, "name": "mallory"}' WHERE event_id = $1`, [ids[0]]);
    });
    expect(await ledger.verifyNow()).toMatchObject({ ok: false, eventId: ids[0] });
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ eventId: ids[0], reason: expect.stringMatching(/changed after it was recorded/) });
  });
});

const governance = (args: string[], env: Record<string, string>) => runCli(args, { EVENTSTORE_URL: '', ...env });

describe.skipIf(!postgresOnly)('governance ledger export | verify | public-key', () => {
  if (!postgresOnly) console.warn('DATABASE_URL is not set: the verifiable ledger CLI suite needs PostgreSQL (the CLI and the test share the database)');
  let opened: TestDb | undefined;
  let dataDir: string | undefined;
  afterEach(async () => {
    await opened?.dispose();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    opened = dataDir = undefined;
  });

  it('exports a range that verifies offline with only the public key, and names the event of an edited file', async () => {
    opened = await postgresOnly!.open();
    const { db } = opened;
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-verifiable-cli-'));
    const env = { ...opened.env!, GOVERNANCE_DATA_DIR: dataDir };
    const ledger = await startVerifiableLedger(db, { dataDir, checkpointSeconds: 3600, verifySeconds: 0 });
    const ids = await append(db, 9);
    await waitFor(async () => (await ledger.tree.catchUp()).size === 9, { timeoutMs: 60_000, description: 'the tree to reach 9 leaves' });
    await ledger.checkpointNow();
    const vkey = ledger.verifierKey;
    await ledger.close();

    const publicKey = await governance(['ledger', 'public-key'], env);
    expect(publicKey, publicKey.stderr).toMatchObject({ code: 0, stdout: `${vkey}\n` });

    const file = path.join(dataDir, 'export.ndjson');
    const exported = await governance(['ledger', 'export', '--from', '2', '--to', '7', '--out', file], env);
    expect(exported, exported.stderr).toMatchObject({ code: 0, stdout: `exported 5 leaves to ${file}\n` });

    // Offline: no database in the environment at all.
    const offline = { PATH: process.env.PATH ?? '', DATABASE_URL: '', GOVERNANCE_DATA_DIR: path.join(dataDir, 'nowhere') };
    const verified = await governance(['ledger', 'verify', file, '--public-key', vkey], offline);
    expect(verified.code, verified.stderr + verified.stdout).toBe(0);
    expect(verified.stdout).toMatch(/^ok: 5 events \(leaves 2\.\.6\) in .* at size 9, root \S+\n$/);

    const text = await readFile(file, 'utf8');
    await writeFile(file, text.replace('"name":"t4"', '"name":"t5"'));
    const caught = await governance(['ledger', 'verify', file, '--public-key', vkey], offline);
    expect(caught.code).toBe(1);
    expect(caught.stdout).toContain(`event ${ids[4]}`);
    expect(caught.stdout.trimEnd().split('\n')).toHaveLength(1);

    const stored = await governance(['ledger', 'verify'], env);
    expect(stored.code, stored.stderr + stored.stdout).toBe(0);
    expect(stored.stdout).toMatch(/^ok: 9 events .*1 checkpoints verified\n$/);
  });
});
