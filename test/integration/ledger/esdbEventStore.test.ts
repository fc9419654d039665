import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { EventStoreDBClient, UnavailableError } from '@eventstore/db-client';
import { readSettings } from '../../../src/config.ts';
import { startService } from '../../../src/service.ts';
import { waitFor } from '../../support/waitFor.ts';
import { openTestPglite } from '../../support/pgliteSeeds.ts';
import { createEventStoreDbEventStore } from '../../../src/ledger/eventstoredb/index.ts';
import {
  exportLedger,
  latestCheckpoint,
  leafIndexesOf,
  signCheckpoint,
  signerKey,
  startMerkleTree,
  verifyExport,
  type ExportLine,
} from '../../../src/ledger/verifiable/index.ts';
import { eventStoreContract } from './eventStore.contract.ts';

const eventStoreUrl = process.env.EVENTSTORE_URL;
if (!eventStoreUrl) {
  console.warn(
    'EVENTSTORE_URL is not set: the EventStoreDB contract suite is skipped. To run it, point EVENTSTORE_URL at an ' +
      'EventStoreDB 22.6+ or KurrentDB 25 server (e.g. esdb://localhost:2113?tls=false; on a secure cluster a user of $admins or $ops).',
  );
}

describe.skipIf(!eventStoreUrl)('EventStoreDB event store (needs EVENTSTORE_URL)', () => {
  // EventStoreDB positions are assigned at commit and the client has no transactions: the race runs
  // without held-open writers.
  eventStoreContract('eventstoredb', async () => {
    const store = createEventStoreDbEventStore(eventStoreUrl!);
    return { store, dispose: () => store.close() };
  });
});

async function* ndjson(header: unknown, lines: AsyncIterable<ExportLine>): AsyncIterable<string> {
  yield JSON.stringify(header);
  for await (const line of lines) yield JSON.stringify(line);
}

describe.skipIf(!eventStoreUrl)('the verifiable ledger on EventStoreDB (needs EVENTSTORE_URL)', () => {
  // The tree follows the whole of $all from its start, as the service's does; on a server that holds much,
  // the first catch-up reads all of it.
  it('keeps the tree of $all beside the read models, proves what was appended, and shows a deleted stream as missing leaves', { timeout: 300_000 }, async () => {
    const store = createEventStoreDbEventStore(eventStoreUrl!);
    const admin = EventStoreDBClient.connectionString(eventStoreUrl!);
    const db = await openTestPglite({ migrate: true });
    try {
      const stream = `verifiable-${randomUUID()}`;
      const appended = await store.append(stream, [0, 1, 2].map((n) => ({ type: 'LimitSet', data: { n, limit: 1.5 }, metadata: { actor: 'auditor-test' } })));
      const tree = startMerkleTree(db, { ledger: store, paceMs: 0 });
      try {
        await tree.catchUp();
      } finally {
        await tree.close();
      }
      const ours = await store.readStream(stream);
      const leaves = await leafIndexesOf(db, ours.map((event) => event.id));
      const first = leaves.get(ours[0]!.id)!;
      // One append is contiguous in $all: three consecutive leaves, the last at the position the append returned.
      expect(ours.map((event) => leaves.get(event.id))).toEqual([first, first + 1, first + 2]);
      const { rows } = await db.query<{ position: string }>("SELECT tx_id::text || ':' || global_position::text AS position FROM gl_merkle_leaves WHERE leaf_index = $1", [String(first + 2)]);
      expect(rows[0]!.position).toBe(`${appended.position.commit}:${appended.position.prepare}`);
      const key = signerKey('governance.test/esdb', generateKeyPairSync('ed25519').privateKey);
      expect(await signCheckpoint(db, key)).toBeDefined();
      const range = { from: first, to: first + 3 };
      const exported = await exportLedger(db, range, store);
      expect(await verifyExport(ndjson(exported.header, exported.lines), key)).toMatchObject({ ok: true, events: 3 });
      // An administrator deletes the stream: its events stay in $all until a scavenge, but the stream no longer reads them.
      await admin.deleteStream(stream);
      const after = await exportLedger(db, range, store);
      expect(await verifyExport(ndjson(after.header, after.lines), key)).toMatchObject({ ok: false, eventId: ours[0]!.id, reason: expect.stringMatching(/was deleted/) });
    } finally {
      await store.close();
      await admin.dispose();
      await db.close();
    }
  });
});

describe.skipIf(!eventStoreUrl)('the service on an EventStoreDB ledger (needs EVENTSTORE_URL)', () => {
  it('keeps the tree beside its read models and signs a checkpoint that covers an appended event', { timeout: 300_000 }, async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), 'gl-esdb-verifiable-'));
    const service = await startService(
      readSettings({ GOVERNANCE_DATA_DIR: dataDir, EVENTSTORE_URL: eventStoreUrl!, GOVERNANCE_CHECKPOINT_SECONDS: '1' }),
      pino({ level: 'silent' }),
    );
    try {
      const { position } = await service.store.append(`verifiable-${randomUUID()}`, [{ type: 'LimitSet', data: { n: 1 } }]);
      await waitFor(
        async () => {
          const { rows } = await service.db.query<{ leaf_index: string }>(
            'SELECT leaf_index::text FROM gl_merkle_leaves WHERE tx_id = $1::xid8 AND global_position = $2::bigint',
            [String(position.commit), String(position.prepare)],
          );
          const latest = await latestCheckpoint(service.db);
          return rows[0] !== undefined && latest !== undefined && Number(rows[0].leaf_index) < latest.treeSize;
        },
        { timeoutMs: 240_000, description: 'a signed checkpoint covering the appended event' },
      );
    } finally {
      await service.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('EventStoreDB event store without a server', () => {
  it('fails reads and appends with the client error instead of hanging', async () => {
    // Port 9 (discard) refuses connections on this machine, as any closed port does.
    const store = createEventStoreDbEventStore('esdb://127.0.0.1:9?tls=false');
    try {
      await expect(store.readAll('start', 10)).rejects.toBeInstanceOf(UnavailableError);
      // The client's batch append reports the gRPC status as is, without its own error class.
      await expect(store.append('s', [{ type: 'Opened', data: {} }])).rejects.toThrow(/UNAVAILABLE/);
    } finally {
      await store.close();
    }
  });
});
