// The verifier's worker threads (leafHashers.ts) give the verdict the single-thread pass gives: the same
// summary for a whole export, the same first bad event named for an altered one.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  EXPORT_FORMAT,
  TreeBuilder,
  formatCheckpoint,
  leafHash,
  signNote,
  signerKey,
  verifyExport,
  type LeafEvent,
} from '../../../../src/ledger/verifiable/index.ts';

const key = signerKey('governance.test/parallel', generateKeyPairSync('ed25519').privateKey);

function exportOf(count: number): string[] {
  const builder = new TreeBuilder();
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    const event: LeafEvent = {
      id: randomUUID(),
      stream: `tenant-${i % 7}`,
      revision: String(i),
      type: 'TenantOverrideSet',
      data: { z: i, a: { limit: 1.5, tags: ['x', 'é'] } },
      metadata: { actor: 'test', reason: `step ${i}` },
      recordedAt: '2026-12-01T09:30:00.123456Z',
    };
    const hash = leafHash(event);
    builder.push(hash);
    lines.push(JSON.stringify({ leaf: i, event, stored: { eventId: event.id, hash: hash.toString('hex') } }));
  }
  const checkpoint = signNote(formatCheckpoint({ origin: key.name, treeSize: count, rootHash: builder.root() }), key);
  return [JSON.stringify({ format: EXPORT_FORMAT, checkpoint, fromLeaf: 0, toLeaf: count, outside: [], consistency: [] }), ...lines];
}

async function* each(lines: string[]) {
  yield* lines;
}

describe('the verifier in worker threads', () => {
  it('verifies a whole export as the single-thread pass does, and names the same altered event', async () => {
    const lines = exportOf(2_500);
    const single = await verifyExport(each(lines), key, { threads: 0 });
    const threaded = await verifyExport(each(lines), key, { threads: 2 });
    expect(single).toMatchObject({ ok: true, events: 2_500 });
    expect(threaded).toEqual(single);

    const altered = [...lines];
    const victim = JSON.parse(altered[1_777]!) as { event: LeafEvent };
    (victim.event.data as { z: number }).z = -1;
    altered[1_777] = JSON.stringify(victim);
    const caught = await verifyExport(each(altered), key, { threads: 2 });
    expect(caught).toMatchObject({ ok: false, eventId: victim.event.id, leaf: 1_776, reason: expect.stringMatching(/was changed after it was recorded/) });
    expect(await verifyExport(each(altered), key, { threads: 0 })).toEqual(caught);
  }, 120_000);
});
