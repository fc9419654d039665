// ledgerCheckpoint, ledgerInclusionProof and ledgerConsistencyProof: what an auditor asks the service, checked
// the way the auditor would, with the verifier key and RFC 9162 verification only.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storageTargets } from '../../support/databases.ts';
import { OPERATOR } from '../../support/controlPlaneHarness.ts';
import { openApiHarness, type ApiHarness } from './apiHarness.ts';
import { waitFor } from '../../support/waitFor.ts';
import {
  parseVerifierKey,
  signCheckpoint,
  signerKey,
  startMerkleTree,
  verifyCheckpoint,
  verifyConsistency,
  verifyInclusion,
  type TreeCheckpoint,
} from '../../../src/ledger/verifiable/index.ts';

const b64 = (text: string) => Buffer.from(text, 'base64');

describe.each(storageTargets)('GraphQL ledger proofs on $name', (target) => {
  let api: ApiHarness;
  const ids: string[] = [];
  let firstCheckpointNote: string;

  beforeAll(async () => {
    api = await openApiHarness(target);
    const key = signerKey('governance.test/api', generateKeyPairSync('ed25519').privateKey);
    const tree = startMerkleTree(api.db, { paceMs: 0 });
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 5; i++) {
        const id = randomUUID();
        ids.push(id);
        await api.store.append(`proof-${round}`, [{ id, type: 'ProofTestEvent', data: { round, i } }]);
      }
      await waitFor(async () => (await tree.catchUp()).size === (await api.db.query('SELECT 1 FROM gl_events')).rowCount, {
        timeoutMs: 60_000,
        description: 'the tree to reach every event',
      });
      const signed = await signCheckpoint(api.db, key);
      if (round === 0) firstCheckpointNote = signed!.note;
    }
    await tree.close();
  });
  afterAll(() => api?.dispose());

  it('answers the latest checkpoint, an inclusion proof and a consistency proof that verify', async () => {
    const auditor = await api.token('AUDITOR');
    const answer = await api.gql<{ ledgerCheckpoint: { treeSize: string; rootHash: string; note: string; verifierKey: string } }>(
      auditor,
      '{ ledgerCheckpoint { treeSize rootHash note verifierKey signedAt } }',
    );
    expect(answer.errors).toBeUndefined();
    const latest = answer.data!.ledgerCheckpoint;
    const key = parseVerifierKey(latest.verifierKey);
    const verdict = verifyCheckpoint(latest.note, key);
    expect(verdict.ok).toBe(true);
    const checkpoint = (verdict as { checkpoint: TreeCheckpoint }).checkpoint;
    expect(String(checkpoint.treeSize)).toBe(latest.treeSize);

    for (const eventId of [ids[0]!, ids[6]!, ids.at(-1)!]) {
      const proof = await api.gql<{ ledgerInclusionProof: { leafIndex: string; treeSize: string; leafHash: string; hashes: string[] } }>(
        auditor,
        'query($eventId: ID!) { ledgerInclusionProof(eventId: $eventId) { eventId leafIndex treeSize leafHash hashes checkpoint { treeSize } } }',
        { eventId },
      );
      expect(proof.errors).toBeUndefined();
      const p = proof.data!.ledgerInclusionProof;
      expect(verifyInclusion(Number(p.leafIndex), checkpoint.treeSize, b64(p.leafHash), p.hashes.map(b64), checkpoint.rootHash)).toBe(true);
    }

    const first = verifyCheckpoint(firstCheckpointNote, key);
    expect(first.ok).toBe(true);
    const older = (first as { checkpoint: TreeCheckpoint }).checkpoint;
    const consistency = await api.gql<{ ledgerConsistencyProof: { hashes: string[]; fromCheckpoint: { note: string } } }>(
      auditor,
      'query($from: String!) { ledgerConsistencyProof(fromSize: $from) { fromSize toSize hashes fromCheckpoint { note } toCheckpoint { note } } }',
      { from: String(older.treeSize) },
    );
    expect(consistency.errors).toBeUndefined();
    expect(verifyConsistency(older.treeSize, checkpoint.treeSize, older.rootHash, checkpoint.rootHash, consistency.data!.ledgerConsistencyProof.hashes.map(b64))).toBe(true);
  });

  it('names the events limitHistory, effectiveLimitsAt and effectiveLimitTimeline were folded from, each proven against the checkpoint', async () => {
    const key = signerKey('governance.test/api', generateKeyPairSync('ed25519').privateKey);
    const from = new Date(Date.now() - 1_000).toISOString();
    await api.controlPlane.defineTier(OPERATOR, { tierId: 'gold', name: 'Gold' });
    await api.controlPlane.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 50, reason: 'gold tier' });
    await api.controlPlane.registerTenant(OPERATOR, { tenantId: 'proven', tierId: 'gold' });
    await api.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'proven', dimension: 'INGEST', ratePerSecond: 500, reason: 'launch' });
    await api.projections.waitForCaughtUp();
    const tree = startMerkleTree(api.db, { paceMs: 0 });
    await waitFor(async () => (await tree.catchUp()).size === (await api.db.query('SELECT 1 FROM gl_events')).rowCount, {
      timeoutMs: 60_000,
      description: 'the tree to reach every event',
    });
    await tree.close();
    const checkpoint = (await signCheckpoint(api.db, key))!;
    const at = new Date().toISOString();

    const auditor = await api.token('AUDITOR');
    const refs = '{ eventId position leafIndex }';
    const answer = await api.gql<{
      limitHistory: { edges: Array<{ node: { kind: string; sourceEvents: Array<{ eventId: string; position: string; leafIndex: string }> } }> };
      effectiveLimitsAt: Array<{ dimension: string; source: string; sourceEvents: Array<{ eventId: string; leafIndex: string }> }>;
      effectiveLimitTimeline: Array<{ cause: string; sourceEvents: Array<{ eventId: string; leafIndex: string }> }>;
    }>(
      auditor,
      `query($at: DateTime!, $from: DateTime!) {
        limitHistory(tenantId: "proven", first: 10) { edges { node { kind position sourceEvents ${refs} } } }
        effectiveLimitsAt(tenantId: "proven", at: $at) { dimension source sourceEvents ${refs} }
        effectiveLimitTimeline(tenantId: "proven", dimension: INGEST, from: $from, to: $at) { cause sourceEvents ${refs} }
      }`,
      { at, from },
    );
    expect(answer.errors).toBeUndefined();
    const history = answer.data!.limitHistory.edges.map((edge) => edge.node);
    expect(history.map((change) => change.kind)).toEqual(['OVERRIDE_SET', 'TENANT_REGISTERED']);
    const ingest = answer.data!.effectiveLimitsAt.find((limit) => limit.dimension === 'INGEST')!;
    expect(ingest.source).toBe('TENANT_OVERRIDE');
    expect(ingest.sourceEvents).toHaveLength(2);
    const timeline = answer.data!.effectiveLimitTimeline;
    expect(timeline.map((change) => change.cause)).toEqual(['TENANT_REGISTERED', 'OVERRIDE_SET']);
    const sources = [...history.flatMap((change) => change.sourceEvents), ...ingest.sourceEvents, ...timeline.flatMap((change) => change.sourceEvents)];
    expect(sources).toHaveLength(6);
    // The override's event is named by all three answers: one event, one leaf.
    expect(new Set([history[0]!.sourceEvents[0]!.eventId, ingest.sourceEvents[1]!.eventId, timeline[1]!.sourceEvents[0]!.eventId]).size).toBe(1);
    for (const source of sources) {
      const proof = await api.gql<{ ledgerInclusionProof: { leafIndex: string; leafHash: string; hashes: string[] } }>(
        auditor,
        'query($eventId: ID!) { ledgerInclusionProof(eventId: $eventId) { leafIndex leafHash hashes } }',
        { eventId: source.eventId },
      );
      expect(proof.errors).toBeUndefined();
      const p = proof.data!.ledgerInclusionProof;
      expect(p.leafIndex).toBe(source.leafIndex);
      expect(verifyInclusion(Number(p.leafIndex), checkpoint.treeSize, b64(p.leafHash), p.hashes.map(b64), checkpoint.rootHash)).toBe(true);
    }
  });

  it('is for AUDITOR and OPERATOR only, and refuses a size past the tree', async () => {
    const operator = await api.token('OPERATOR');
    expect((await api.gql(operator, '{ ledgerCheckpoint { treeSize } }')).errors).toBeUndefined();
    const viewer = await api.token('TENANT_VIEWER', 'acme');
    const refused = await api.gql(viewer, '{ ledgerCheckpoint { treeSize } }');
    expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const tooFar = await api.gql(operator, '{ ledgerConsistencyProof(fromSize: "1", toSize: "99999") { hashes } }');
    expect(tooFar.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', field: 'toSize' } });
    const unknown = await api.gql(operator, `{ ledgerInclusionProof(eventId: "${randomUUID()}") { hashes } }`);
    expect(unknown).toMatchObject({ data: { ledgerInclusionProof: null } });
  });
});
