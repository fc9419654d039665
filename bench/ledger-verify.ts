// Verifying an export offline (governance ledger verify FILE): 1,000,000 events in one file, against a checkpoint
// signed over them. The promise (docs/verifiable-ledger.md): under 30 s. The file is written first (untimed);
// the timed part is what `verify` does: read the file as a stream, parse each line, recompute every leaf (RFC
// 8785 form, SHA-256), rebuild the root, check the signature. Baseline: the same verifier on one thread
// (threads: 0, the verifier before its leaf hashing moved to worker threads), alternating with the threaded one
// in the same process. One JSON line per run, the last the summary.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import {
  EXPORT_FORMAT,
  TreeBuilder,
  defaultLeafHashers,
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
const ROUNDS = Number(process.env.LEDGER_VERIFY_ROUNDS ?? 1);
const key = signerKey('governance.bench/ledger', generateKeyPairSync('ed25519').privateKey);
const dir = await mkdtemp(path.join(tmpdir(), 'gl-bench-verify-'));
const file = path.join(dir, 'export.ndjson');
const out = createWriteStream(file);
const builder = new TreeBuilder();
const recordedAt = '2026-12-01T09:30:00.123456Z';
const lines: string[] = [];
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
  if (lines.length === 10_000 || i === EVENTS - 1) {
    if (!out.write(`${lines.join('\n')}\n`)) await once(out, 'drain');
    lines.length = 0;
  }
}
out.end();
await once(out, 'finish');
const checkpoint = signNote(formatCheckpoint({ origin: key.name, treeSize: EVENTS, rootHash: builder.root() }), key);
const header = JSON.stringify({ format: EXPORT_FORMAT, checkpoint, fromLeaf: 0, toLeaf: EVENTS, outside: [], consistency: [] });
const verifier = parseVerifierKey(formatVerifierKey(key));

async function* fileLines(): AsyncIterable<string> {
  yield header;
  const reader = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  yield* reader;
}

/** Wall seconds, and CPU seconds of the whole process (every thread): on a shared, loaded host the CPU time is the steadier figure. */
async function run(threads: number): Promise<{ seconds: number; cpuSeconds: number }> {
  const started = performance.now();
  const cpu = process.cpuUsage();
  const verdict = await verifyExport(fileLines(), verifier, { threads });
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  if (!verdict.ok) throw new Error(`the bench's own export did not verify: ${verdict.reason}`);
  return { seconds, cpuSeconds: (used.user + used.system) / 1e6 };
}

const threads = defaultLeafHashers();
const results: { threaded: number[]; single: number[] } = { threaded: [], single: [] };
const cpuSeconds: { threaded: number[]; single: number[] } = { threaded: [], single: [] };
try {
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating order, so neither always runs on the warmer (or busier) moment.
    for (const which of round % 2 === 0 ? (['threaded', 'single'] as const) : (['single', 'threaded'] as const)) {
      const load = loadavg()[0]!;
      const { seconds, cpuSeconds: cpu } = await run(which === 'threaded' ? threads : 0);
      results[which].push(seconds);
      cpuSeconds[which].push(cpu);
      console.log(
        JSON.stringify({
          bench: 'ledger-verify',
          run: which,
          threads: which === 'threaded' ? threads : 0,
          events: EVENTS,
          seconds: Number(seconds.toFixed(2)),
          cpuSeconds: Number(cpu.toFixed(2)),
          loadAverage1m: Number(load.toFixed(1)),
        }),
      );
    }
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
const best = (values: number[]) => Math.min(...values);
console.log(
  JSON.stringify({
    bench: 'ledger-verify',
    events: EVENTS,
    threads,
    seconds: Number(best(results.threaded).toFixed(2)),
    eventsPerSecond: Math.round(EVENTS / best(results.threaded)),
    cpuSeconds: Number(best(cpuSeconds.threaded).toFixed(2)),
    baselineSeconds: Number(best(results.single).toFixed(2)),
    baselineCpuSeconds: Number(best(cpuSeconds.single).toFixed(2)),
    baselineIs: 'the same verifier on one thread (threads: 0: parse, RFC 8785 and SHA-256 of every leaf on the reading thread), same process, alternating order',
    generator: 'in-process before timing: synthetic TenantOverrideSet events written to a temporary NDJSON export, read back as a stream as governance ledger verify FILE does',
    limitSeconds: 30,
    loadAverage1m: Number(loadavg()[0]!.toFixed(1)),
    cores: availableParallelism(),
  }),
);
