// The ledger's Merkle tree on PGlite and PostgreSQL: kept as events are appended, proofs that verify, signed
// checkpoints, an export verified offline, and tampering as a superuser would do it (the append-only trigger
// out of the way) caught and named by verify.
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../../support/spawnTs.ts';
import { storageTargets, type TestDb } from '../../support/databases.ts';
import { waitFor } from '../../support/waitFor.ts';
import type { Db } from '../../../src/db/db.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { addDays, dayOf, SUMMARY_EVENT_TYPES } from '../../../src/ledger/postgres/summaryPartitions.ts';
import { manifestPathOf, readArchive, sha256OfFile } from '../../../src/ledger/retention/archiveFile.ts';
import { archiveSummaryDays } from '../../../src/ledger/retention/archiveSummaries.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';
import { appendSampleEvents, asSuperuser, ndjson, signedTree } from '../../support/merkleLedger.ts';
import {
  appendTreePage,
  exportLedger,
  exportToFile,
  findLeaf,
  formatCheckpoint,
  formatVerifierKey,
  MERKLE_TREE_READER,
  verifyFile,
  leafHash,
  leafEventOf,
  LEAF_COLUMNS,
  latestCheckpoint,
  parseCheckpoint,
  rootOfLeaves,
  signCheckpoint,
  signerKey,
  signNote,
  startMerkleTree,
  storedConsistencyProof,
  storedInclusionProof,
  storedRoot,
  verifyConsistency,
  verifyExport,
  verifyInclusion,
  verifyStoredLedger,
  type LeafRow,
  type SignerKey,
} from '../../../src/ledger/verifiable/index.ts';

const ORIGIN = 'governance.test/ledger';

const governance = (args: string[]) => runCli(args);

/** Appends `count` events over three streams, in several transactions (appendSampleEvents). */
async function appendSome(db: Db, count: number): Promise<void> {
  const store = createPostgresEventStore(db, { pollIntervalMs: 250 });
  try {
    await appendSampleEvents(store, count, 'tenant');
  } finally {
    await store.close();
  }
}

async function eventsInOrder(db: Db): Promise<LeafRow[]> {
  return (await db.query<LeafRow>(`SELECT ${LEAF_COLUMNS} FROM gl_events g ORDER BY g.tx_id, g.global_position`)).rows;
}


describe.each(storageTargets)('the verifiable ledger on $name', (target) => {
  let opened: TestDb | undefined;
  afterEach(async () => {
    await opened?.dispose();
    opened = undefined;
  });

  async function ledgerWithTree(count: number): Promise<{ db: Db; key: SignerKey }> {
    opened = await target.open();
    const { db } = opened;
    await appendSome(db, count);
    return { db, key: await signedTree(db, count, { origin: ORIGIN }) };
  }

  it('keeps the tree of the global order: its root, inclusion and consistency proofs verify', async () => {
    const { db, key } = await ledgerWithTree(23);
    const events = await eventsInOrder(db);
    const leaves = events.map((row) => leafHash(leafEventOf(row)));
    const root = rootOfLeaves(leaves);
    expect((await storedRoot(db, 23)).equals(root)).toBe(true);
    const checkpoint = parseCheckpoint((await latestCheckpoint(db))!.note.split('\n\n')[0] + '\n');
    expect(checkpoint).toEqual({ origin: ORIGIN, treeSize: 23, rootHash: root });
    for (const [i, row] of events.entries()) {
      const leaf = await findLeaf(db, row.id);
      expect(leaf?.leafIndex).toBe(i);
      expect(verifyInclusion(i, 23, leaves[i]!, await storedInclusionProof(db, i, 23), root)).toBe(true);
    }
    for (const from of [1, 2, 7, 8, 16, 22]) {
      expect(verifyConsistency(from, 23, rootOfLeaves(leaves.slice(0, from)), root, await storedConsistencyProof(db, from, 23))).toBe(true);
    }
    expect((await verifyStoredLedger(db, key)).ok).toBe(true);
  });

  it('exports a range that verifies offline with the public key alone, and with an earlier checkpoint', async () => {
    const { db, key } = await ledgerWithTree(20);
    const earlier = (await latestCheckpoint(db))!.note;
    await appendSome(db, 11);
    const tree = startMerkleTree(db, { paceMs: 0 });
    await waitFor(async () => (await tree.catchUp()).size === 31, { timeoutMs: 60_000, description: 'the tree to reach 31 leaves' });
    await tree.close();
    await signCheckpoint(db, key);
    for (const [from, to] of [[0, 31], [5, 17], [20, 31], [30, 31], [12, 12]] as const) {
      const { header, lines } = await exportLedger(db, { from, to, since: earlier });
      const verdict = await verifyExport(ndjson(header, lines), key, { since: earlier });
      expect(verdict, `[${from}, ${to})`).toMatchObject({ ok: true, treeSize: 31, events: to - from });
    }
    // Another key's checkpoint proves nothing.
    const stranger = signerKey(ORIGIN, generateKeyPairSync('ed25519').privateKey);
    const { header, lines } = await exportLedger(db, { from: 0 });
    expect(await verifyExport(ndjson(header, lines), stranger)).toMatchObject({ ok: false, reason: expect.stringMatching(/does not verify/) });
  });

  it("exports a day (--from and --to instants) to a file that verifies offline with only the public key", async () => {
    opened = await target.open();
    const { db } = opened;
    await appendSome(db, 12);
    // The first five events were recorded the day before (as an older ledger's would be), before the tree took them.
    const first = (await eventsInOrder(db)).slice(0, 5).map((row) => row.id);
    await asSuperuser(db, [`UPDATE gl_events SET recorded_at = recorded_at - interval '1 day' WHERE event_id = ANY($1::uuid[])`], [[first]]);
    const tree = startMerkleTree(db, { paceMs: 0, pollMs: 200 });
    try {
      await waitFor(async () => (await tree.catchUp()).size === 12, { timeoutMs: 60_000, description: 'the tree to reach 12 leaves' });
    } finally {
      await tree.close();
    }
    const key = signerKey(ORIGIN, generateKeyPairSync('ed25519').privateKey);
    await signCheckpoint(db, key);
    const events = await eventsInOrder(db);
    const today = Date.parse(events[5]!.recorded_at.slice(0, 10));
    const dir = await mkdtemp(path.join(tmpdir(), 'gl-day-export-'));
    try {
      for (const [from, to, leaves] of [
        [today, today + 86_400_000, '5..11'],
        [today - 86_400_000, today, '0..4'],
      ] as const) {
        // Only today's events (yesterday's), by their recorded time: what `governance ledger export --from DAY --to NEXT_DAY` asks.
        const todayEvents = events.filter((row) => Date.parse(row.recorded_at) >= from && Date.parse(row.recorded_at) < to);
        const file = path.join(dir, `day-${from}.ndjson`);
        expect(await exportToFile(db, { from: new Date(from), to: new Date(to) }, file)).toBe(todayEvents.length);
        // With no database: the file and the verifier key, nothing else.
        const verdict = await verifyFile(file, formatVerifierKey(key));
        expect(verdict).toMatchObject({ ok: true, events: todayEvents.length, treeSize: 12 });
        expect(verdict.ok && verdict.summary).toContain(`(leaves ${leaves})`);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('cuts a tree page and an export page to their byte budget, so large events are never all parsed at once', async () => {
    opened = await target.open();
    const { db } = opened;
    const store = createPostgresEventStore(db, { pollIntervalMs: 250 });
    // 16 events of ~400 KB of incompressible text: over 4 MiB stored together.
    for (let i = 0; i < 16; i++) {
      await store.append('large', [{ type: 'Large', data: { blob: randomBytes(300_000).toString('base64') } }]);
    }
    await store.close();
    let pages = 0;
    let leaves = 0;
    await waitFor(
      async () => {
        const added = await appendTreePage(db, 2_000);
        if (added > 0) pages++;
        leaves += added;
        expect(added).toBeLessThan(16);
        return leaves === 16;
      },
      { timeoutMs: 60_000, description: 'the tree to take the 16 large events' },
    );
    expect(pages).toBeGreaterThan(1);
    const events = await eventsInOrder(db);
    expect((await storedRoot(db, 16)).equals(rootOfLeaves(events.map((row) => leafHash(leafEventOf(row)))))).toBe(true);
    // The export, and `ledger verify` over the database, page by the same budget and still pair every event with its leaf.
    const key = signerKey(ORIGIN, generateKeyPairSync('ed25519').privateKey);
    expect(await signCheckpoint(db, key)).toBeDefined();
    expect(await verifyStoredLedger(db, key)).toMatchObject({ ok: true, treeSize: 16, events: 16 });
  });

  it('keeps an archived day provable: the archive file verifies offline, the stored verify checks it, an edit is caught and named', async () => {
    opened = await target.open();
    const { db } = opened;
    const dir = await mkdtemp(path.join(tmpdir(), 'gl-archive-proofs-'));
    try {
      await appendSome(db, 5);
      const store = createPostgresEventStore(db, { pollIntervalMs: 250 });
      const second = Math.floor(Date.now() / 1000) - 60;
      const recorder = createLedgerRecorder(store, { maxEntriesPerEvent: 3 });
      await recorder.record(Array.from({ length: 10 }, (_, i) => admissionSummary({ tenantId: `tenant-${i}`, fromSecond: second + i, admittedUnits: i + 1 })), []);
      await store.close();
      await appendSome(db, 5);
      const total = (await eventsInOrder(db)).length;
      const summaries = (await eventsInOrder(db)).filter((row) => SUMMARY_EVENT_TYPES.includes(row.type));
      expect(summaries.length).toBeGreaterThan(2);
      const tree = startMerkleTree(db, { paceMs: 0, pollMs: 200 });
      await waitFor(async () => (await tree.catchUp()).size === total, { timeoutMs: 60_000, description: `the tree to reach ${total} leaves` });
      await tree.close();
      const key = signerKey(ORIGIN, generateKeyPairSync('ed25519').privateKey);
      const vkey = formatVerifierKey(key);

      // Two days later, one day kept: today's summaries leave the database, each with its inclusion proof.
      const later = Date.now() + 2 * 86_400_000;
      const archive = () => archiveSummaryDays(db, { dir, before: addDays(dayOf(later), -1), projections: [MERKLE_TREE_READER], now: () => later });
      expect((await archive()).skipped).toContainEqual({ day: dayOf(Date.now()), reason: expect.stringMatching(/no signed checkpoint covers/) });
      await signCheckpoint(db, key);
      const outcome = await archive();
      expect(outcome.skipped).toEqual([]);
      const file = outcome.archived.find((each) => each.day === dayOf(Date.now()))!.file;
      const read: string[] = [];
      for await (const event of readArchive(file)) read.push(event.id);
      expect(read).toEqual(summaries.map((row) => row.id));

      const offline = await verifyFile(file, vkey);
      expect(offline).toMatchObject({ ok: true, events: summaries.length, treeSize: total });
      const stored = await verifyStoredLedger(db, key);
      expect(stored).toMatchObject({ ok: true, archived: summaries.length });
      expect(stored.ok && stored.summary).toMatch(new RegExp(`archived leaves: ${summaries.length} checked against 1 archive files, 0 taken as stored`));

      // A careless edit fails the manifest; a careful one (the manifest rewritten to match) fails the proof.
      const lines = gunzipSync(await readFile(file)).toString('utf8').trimEnd().split('\n');
      const victim = JSON.parse(lines[1]!) as { id: string; data: { entries: unknown[] } };
      lines[1] = JSON.stringify({ ...victim, data: { ...victim.data, entries: [] } });
      await writeFile(file, gzipSync(`${lines.join('\n')}\n`));
      expect(await verifyFile(file, vkey)).toMatchObject({ ok: false, reason: expect.stringMatching(/^archive governance-admissions-.*the manifest says.*edited/) });
      const manifestFile = manifestPathOf(file);
      const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as { sha256: string; bytes: number };
      await writeFile(manifestFile, JSON.stringify({ ...manifest, sha256: await sha256OfFile(file), bytes: (await readFile(file)).length }));
      const edited = new RegExp(`archive governance-admissions-.* ${victim.id} .*the archive file was edited`);
      expect(await verifyFile(file, vkey)).toMatchObject({ ok: false, eventId: victim.id, reason: expect.stringMatching(edited) });
      expect(await verifyStoredLedger(db, key)).toMatchObject({ ok: false, eventId: victim.id, reason: expect.stringMatching(edited) });
      const cli = await governance(['ledger', 'verify', file, '--public-key', vkey]);
      expect(cli.code).toBe(1);
      expect(cli.stdout).toMatch(edited);

      // Without the file, the stored verify takes the archived leaves as the tree stored them, and says so.
      await rm(file);
      const without = await verifyStoredLedger(db, key);
      expect(without.ok && without.summary).toMatch(new RegExp(`${summaries.length} taken as stored`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);

  describe('tampering as a superuser', () => {
    async function expectCaught(db: Db, key: SignerKey, eventId: string | undefined, reason: RegExp) {
      const stored = await verifyStoredLedger(db, key);
      expect(stored).toMatchObject({ ok: false, reason: expect.stringMatching(reason) });
      if (eventId) expect(stored).toMatchObject({ eventId });
      const { header, lines } = await exportLedger(db, { from: 0 });
      const offline = await verifyExport(ndjson(header, lines), key);
      expect(offline).toMatchObject({ ok: false, reason: expect.stringMatching(reason) });
      if (eventId) expect(offline).toMatchObject({ eventId });
    }

    it("catches an event's data changed", async () => {
      const { db, key } = await ledgerWithTree(12);
      const victim = (await eventsInOrder(db))[6]!;
      await asSuperuser(db, [`UPDATE gl_events SET data = jsonb_set(data, '{z}', '999') WHERE event_id = $1`], [[victim.id]]);
      await expectCaught(db, key, victim.id, /was changed after it was recorded/);
    });

    it('catches an event deleted', async () => {
      const { db, key } = await ledgerWithTree(12);
      const victim = (await eventsInOrder(db))[4]!;
      await asSuperuser(db, ['DELETE FROM gl_events WHERE event_id = $1'], [[victim.id]]);
      await expectCaught(db, key, victim.id, /was deleted/);
    });

    it('catches two events swapped', async () => {
      const { db, key } = await ledgerWithTree(12);
      const events = await eventsInOrder(db);
      const [a, b] = [events[2]!, events[8]!];
      await asSuperuser(
        db,
        [
          'UPDATE gl_events SET global_position = -1, tx_id = $2::xid8 WHERE event_id = $1',
          'UPDATE gl_events SET global_position = $2, tx_id = $3::xid8 WHERE event_id = $1',
          'UPDATE gl_events SET global_position = $2, tx_id = $3::xid8 WHERE event_id = $1',
        ],
        [
          [a.id, a.tx_id],
          [b.id, a.global_position, a.tx_id],
          [a.id, b.global_position, b.tx_id],
        ],
      );
      await expectCaught(db, key, a.id, /order was changed/);
    });

    it('catches an event inserted in the past', async () => {
      const { db, key } = await ledgerWithTree(12);
      const early = (await eventsInOrder(db))[1]!;
      const forged = randomUUID();
      await asSuperuser(
        db,
        [
          `INSERT INTO gl_events (global_position, tx_id, event_id, stream, revision, type, data, metadata)
           VALUES ($1, $2::xid8, $3, 'tenant-forged', 0, 'LimitSet', '{"limit": 1000000}', '{}')`,
        ],
        [[String(Number(early.global_position) + 1_000_000), early.tx_id, forged]],
      );
      await expectCaught(db, key, forged, /inserted after the fact/);
    });

    it('catches a checkpoint re-signed with another key', async () => {
      const { db, key } = await ledgerWithTree(12);
      const other = signerKey(ORIGIN, generateKeyPairSync('ed25519').privateKey);
      const latest = (await latestCheckpoint(db))!;
      const forged = signNote(formatCheckpoint({ origin: ORIGIN, treeSize: latest.treeSize, rootHash: latest.rootHash }), other);
      await db.query('UPDATE gl_merkle_checkpoints SET note = $1 WHERE tree_size = $2', [forged, String(latest.treeSize)]);
      await expectCaught(db, key, undefined, /does not verify with the public key/);
    });
  });
});
