// Verifying an export offline (governance ledger verify FILE): 1,000,000 events in one file, against a checkpoint
// signed over them. The promise (docs/verifiable-ledger.md): under 30 s. The file is built in memory first
// (untimed); the timed part is what `verify` does with its lines: parse, recompute every leaf, rebuild the root,
// check the signature. Last line: JSON.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import {
  EXPORT_FORMAT,
  TreeBuilder,
  formatCheckpoint,
  formatVerifierKey,
  leafHash,
  parseVerifierKey,
  signNote,
  signerKey,
  verifyExport,
  type LeafEvent,
} from '../src/ledger/verifiable/index.ts';

const EVENTS = Number(process.env.LEDGER_VERIFY_EVENTS ?? (process.env.BENCH_QUICK === '1' ? 100_000 : 1_000_000));
const key = signerKey('governance.bench/ledger', generateKeyPairSync('ed25519').privateKey);
const lines: string[] = [];
const builder = new TreeBuilder();
const recordedAt = '2026-12-01T09:30:00.123456Z';
for (let i = 0; i < EVENTS; i++) {
  // A limit change's shape: a few fields of data and metadata, as the control plane writes them.
  const event: LeafEvent = {
    id: randomUUID(),
    stream: `tenant-${i % 1000}`,
    revision: String(Math.floor(i / 1000)),
    type: 'TenantOverrideSet',
    data: { tenantId: `tenant-${i % 1000}`, dimension: 'INGEST', limit: { perSecond: 100 + (i % 50), burst: 200 }, expiresAt: null },
    metadata: { actor: 'op@example.com', reason: 'bench', occurredAt: recordedAt },
    recordedAt,
  };
  const hash = leafHash(event);
  builder.push(hash);
  lines.push(JSON.stringify({ leaf: i, event, stored: { eventId: event.id, hash: hash.toString('hex') } }));
}
const checkpoint = signNote(formatCheckpoint({ origin: key.name, treeSize: EVENTS, rootHash: builder.root() }), key);
lines.unshift(JSON.stringify({ format: EXPORT_FORMAT, checkpoint, fromLeaf: 0, toLeaf: EVENTS, outside: [], consistency: [] }));

async function* asLines() {
  for (const line of lines) yield line;
}

const started = performance.now();
const verdict = await verifyExport(asLines(), parseVerifierKey(formatVerifierKey(key)));
const seconds = (performance.now() - started) / 1000;
if (!verdict.ok) throw new Error(`the bench's own export did not verify: ${verdict.reason}`);
console.log(`verified ${EVENTS} events in ${seconds.toFixed(1)} s (${Math.round(EVENTS / seconds)} events/s)`);
console.log(JSON.stringify({ bench: 'ledger-verify', baselineIs: 'a target, not a peer: 1,000,000 events verified in 30 s', generator: 'the verify code in the bench process, one thread', events: EVENTS, seconds: Number(seconds.toFixed(2)), eventsPerSecond: Math.round(EVENTS / seconds), limitSeconds: 30 }));
