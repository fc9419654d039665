// How the serving process ends, and what of the Governor's decisions the ledger keeps:
// - `npm start`, then SIGTERM or SIGINT to the npm process: the signal reaches the service, which flushes every
//   decision, exits, and leaves the data directory free;
// - SIGTERM drains: /readyz answers 503 for GOVERNANCE_DRAIN_SECONDS while requests still succeed, then a
//   request in flight when the listener closes finishes with `Connection: close`, and the process exits 0
//   within 10 s with every acknowledged admission in the ledger;
// - SIGKILL: what was acknowledged more than one flush interval (1 s) plus a stated margin (500 ms: the tick's
//   offset after the boundary, one append, a late timer) before the kill is already in the ledger, and the
//   projection worker processes (PostgreSQL) end with it;
// - an uncaught exception or an unhandled rejection: logged, everything flushed, exit code 1.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readSettings } from '../../src/config.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openDb } from '../../src/db/open.ts';
import { isAlive } from '../../src/db/dataDirLock.ts';
import { openPostgres, quoteIdent } from '../../src/db/postgres.ts';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import { openEventStore } from '../../src/ledger/openEventStore.ts';
import { databaseUrl } from '../support/databases.ts';
import { answers, freePort } from '../support/privateServers.ts';
import { childProcessesOf } from '../support/replicas.ts';
import { readWholeLedger } from '../support/readLedger.ts';
import { waitFor } from '../support/waitFor.ts';
import { admissionSummaryReader } from '../../src/ledger/catalog/summaryRefs.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const FLUSH_INTERVAL_MS = 1_000;
/**
 * What a decision may wait beyond one flush interval before its batch is in the ledger: the collecting tick's
 * 20 ms after the second's boundary, one append's commit, and the tick's timer firing late on a busy machine.
 */
const SIGKILL_MARGIN_MS = 500;
if (!databaseUrl) console.warn('DATABASE_URL is not set: the SIGKILL bound (which reads the ledger while the service runs) is skipped.');

interface Started {
  child: ChildProcess;
  baseUrl: string;
  port: number;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface Storage {
  env: Record<string, string>;
  dispose(): Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

/** A data directory, and a schema of the machine's PostgreSQL when `postgres` (else embedded PGlite in the directory). */
async function storage(postgres: boolean): Promise<Storage> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'gl-process-end-'));
  const env: Record<string, string> = { GOVERNANCE_DATA_DIR: dataDir };
  let dropSchema = async () => {};
  if (postgres) {
    const schema = `e2e_process_end_${randomBytes(5).toString('hex')}`;
    const admin = openPostgres({ connectionString: databaseUrl!, max: 1 });
    await admin.query(`CREATE SCHEMA ${quoteIdent(schema)}`);
    await admin.close();
    Object.assign(env, { DATABASE_URL: databaseUrl!, GOVERNANCE_DB_SCHEMA: schema });
    dropSchema = async () => {
      const again = openPostgres({ connectionString: databaseUrl!, max: 1 });
      await again.query(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`).finally(() => again.close());
    };
  }
  const disposal = async () => {
    await dropSchema();
    await rm(dataDir, { recursive: true, force: true });
  };
  cleanups.push(disposal);
  return { env, dispose: disposal };
}

/** Registers acme's ingest key before the service starts (embedded storage belongs to one process at a time). */
async function ingestKey(env: Record<string, string>): Promise<string> {
  const db = await openDb(readSettings(env));
  try {
    await migrate(db);
    const registered = await registerIngestCredential(db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    return registered.key;
  } finally {
    await db.close();
  }
}

async function start(command: string, args: string[], env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const child = spawn(command, args, {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: '',
      REDIS_URL: '',
      NATS_URL: '',
      EVENTSTORE_URL: '',
      GOVERNANCE_RUN_SOURCES: '1',
      GOVERNANCE_JWT_SECRET: 'process-end-suite-secret-0123456789abcdef',
      PORT: String(port),
      GOVERNANCE_GRPC_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      GOVERNANCE_DRAIN_SECONDS: '0',
      ...env,
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  await waitFor(() => output.includes('listening on') || child.exitCode !== null, { timeoutMs: 150_000, intervalMs: 100, description: 'the service to listen' });
  if (!output.includes('listening on')) throw new Error(`the service did not start:\n${output}`);
  return { child, baseUrl: `http://127.0.0.1:${port}`, port, output: () => output, exited };
}

/** Posts `count` requests of two readings each; returns the readings answered 202. */
async function ingest(baseUrl: string, key: string, count: number): Promise<number> {
  let accepted = 0;
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${baseUrl}/v1/ingest/acme`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-device-key': key },
      body: JSON.stringify({ readings: [{ deviceId: `pump-${i}`, measurements: { temperature: 20 + i, pressure: 1 } }] }),
    });
    await response.arrayBuffer();
    if (response.status === 202) accepted += 2;
  }
  return accepted;
}

interface Answer {
  status: number;
  connection: string | undefined;
}

/** One ingest POST of two readings, its body sent in two parts: the second when `rest` resolves. */
function ingestInTwoParts(port: number, key: string, agent: http.Agent | false, rest: Promise<void> = Promise.resolve()): Promise<Answer> {
  const body = Buffer.from(JSON.stringify({ readings: [{ deviceId: 'pump-slow', measurements: { temperature: 20, pressure: 1 } }] }));
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/v1/ingest/acme',
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': body.length, 'x-device-key': key },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve({ status: response.statusCode!, connection: response.headers.connection }));
      },
    );
    request.on('error', reject);
    request.write(body.subarray(0, 10));
    void rest.then(() => request.end(body.subarray(10)));
  });
}

/** Units the ledger records as admitted for acme at the HTTP ingest door. */
async function ledgerAdmitted(env: Record<string, string>): Promise<number> {
  const db = await openDb(readSettings(env));
  const store = await openEventStore(db, undefined);
  try {
    return (await readWholeLedger(store))
      .filter((event) => event.stream === ADMISSIONS_STREAM && event.type === 'AdmissionsRecorded')
      .flatMap(admissionSummaryReader())
      .filter((entry) => entry.tenantId === 'acme' && entry.dimension === 'INGEST' && entry.allowance === 'HTTP')
      .reduce((sum, entry) => sum + entry.admittedUnits, 0);
  } finally {
    await store.close();
    await db.close();
  }
}


describe('how the serving process ends', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '`npm start`, then %s to the npm process: the service flushes every decision, exits and frees its storage',
    async (signal) => {
      // PostgreSQL when it is set (the quicker start); embedded storage otherwise, whose lock must be released.
      const { env } = await storage(Boolean(databaseUrl));
      const key = await ingestKey(env);
      const started = await start('npm', ['start', '--silent'], env);
      const accepted = await ingest(started.baseUrl, key, 20);
      expect(accepted).toBeGreaterThan(0);
      started.child.kill(signal);
      await started.exited;
      // `exec` in the start script: the service is the process npm started, not a grandchild npm cannot reach.
      expect(started.output()).toContain('"msg":"shut down"');
      await waitFor(async () => !(await fetch(`${started.baseUrl}/healthz`).then(() => true, () => false)), { description: 'the port to close' });
      // Embedded storage is free again (its lock released) and holds every admission.
      expect(await ledgerAdmitted(env)).toBe(accepted);
    },
    240_000,
  );

  it('SIGTERM drains: /readyz 503 while requests still succeed, in-flight requests finish, exit 0 within 10 s, nothing acknowledged lost', async () => {
    const { env } = await storage(Boolean(databaseUrl));
    const key = await ingestKey(env);
    // A drain of 4 s: the readiness checks and the six requests below must all fall inside it on a busy machine.
    const drainMs = 4_000;
    const started = await start(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], { ...env, GOVERNANCE_DRAIN_SECONDS: String(drainMs / 1000) });
    await waitFor(async () => (await fetch(`${started.baseUrl}/readyz`)).status === 200, { timeoutMs: 60_000, description: '/readyz 200' });
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let accepted = 0;
    const send = async () => {
      const answer = await ingestInTwoParts(started.port, key, keepAlive);
      expect(answer.status).toBe(202);
      accepted += 2;
      return answer;
    };
    expect((await send()).connection).toBe('keep-alive');

    const signalledAt = Date.now();
    started.child.kill('SIGTERM');
    // While draining: /readyz says 503 with the reason, and requests on the kept-alive connection succeed.
    await waitFor(async () => (await fetch(`${started.baseUrl}/readyz`)).status === 503, { timeoutMs: 5_000, description: '/readyz 503' });
    const readyz = await fetch(`${started.baseUrl}/readyz`);
    expect(await readyz.json()).toMatchObject({ status: 'not ready', reasons: expect.arrayContaining([expect.stringMatching(/draining/)]) });
    expect((await fetch(`${started.baseUrl}/healthz`)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await send()).connection).toBe('keep-alive');

    // A request in flight when the listener closes: its body's second part is sent once new connections are
    // refused; it is answered, and told to close its connection.
    let listenerClosed!: () => void;
    const inFlight = ingestInTwoParts(started.port, key, false, new Promise((resolve) => (listenerClosed = resolve)));
    await waitFor(async () => !(await answers(started.port)), { timeoutMs: 8_000, intervalMs: 20, description: 'the listener to close' });
    expect(Date.now() - signalledAt, 'the listener closed after the drain').toBeGreaterThanOrEqual(drainMs);
    const drainedAt = Date.now();
    listenerClosed();
    expect(await inFlight).toEqual({ status: 202, connection: 'close' });
    accepted += 2;

    expect(await started.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalledAt, 'exit within 10 s of SIGTERM').toBeLessThan(10_000);
    console.log(`SIGTERM: drained after ${drainedAt - signalledAt} ms, exited ${Date.now() - drainedAt} ms later`);
    keepAlive.destroy();
    expect(await ledgerAdmitted(env)).toBe(accepted);
  }, 240_000);

  it.skipIf(!databaseUrl)('SIGKILL: every decision acknowledged more than one flush interval (plus a stated margin) before the kill is in the ledger', async () => {
    const { env } = await storage(true);
    const key = await ingestKey(env);
    const started = await start(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], env);
    // Steady traffic, one request at a time; the client notes when each 202 came back. A decision is made
    // before its answer leaves, so an answer's time is no earlier than its decision's.
    const acknowledged: Array<{ atMs: number; units: number }> = [];
    let stop = false;
    const traffic = (async () => {
      for (let i = 0; !stop; i++) {
        const response = await fetch(`${started.baseUrl}/v1/ingest/acme`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-device-key': key },
          body: JSON.stringify({ readings: [{ deviceId: `pump-${i % 7}`, measurements: { temperature: 20, pressure: 1 } }] }),
        }).catch(() => undefined);
        const answeredAtMs = Date.now();
        if (response) await response.arrayBuffer().catch(() => undefined);
        if (response?.status === 202) acknowledged.push({ atMs: answeredAtMs, units: 2 });
      }
    })();
    // Several flush intervals of traffic, so the kill finds flushes behind it and decisions ahead of the next.
    await waitFor(() => acknowledged.length > 0 && Date.now() - acknowledged[0]!.atMs >= 3 * FLUSH_INTERVAL_MS, {
      timeoutMs: 60_000,
      intervalMs: 20,
      description: 'three flush intervals of acknowledged traffic',
    });
    // On PostgreSQL the trends and the demand run in worker processes of their own (GOVERNANCE_PROJECTION_WORKERS).
    const workers = process.platform === 'linux' ? childProcessesOf(started.child.pid!) : [];
    if (process.platform === 'linux') expect(workers).toHaveLength(2);
    const killedAtMs = Date.now();
    started.child.kill('SIGKILL');
    stop = true;
    expect(await started.exited).toMatchObject({ signal: 'SIGKILL' });
    // No projection runner outlives the service: each worker ends when its IPC channel closes.
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    await waitFor(() => workers.every((pid) => !alive(pid)), { timeoutMs: 5_000, intervalMs: 50, description: 'the projection worker processes to end with the service' });
    await traffic;
    const recorded = await ledgerAdmitted(env);

    // The promise (docs/faults.md): a kill loses at most the decisions of the flush interval under way and of a
    // batch whose append had not committed. The margin on top of the interval is for what a decision waits
    // beyond it: the tick that collects a second fires TICK_AFTER_BOUNDARY_MS (20 ms) after the boundary, then
    // one append of the batch commits (one transaction on PostgreSQL), and on a machine shared with other work
    // the tick's timer can fire late; SIGKILL_MARGIN_MS covers those three, and nothing else.
    const cutoffMs = killedAtMs - FLUSH_INTERVAL_MS - SIGKILL_MARGIN_MS;
    const mustBeRecorded = acknowledged.filter((each) => each.atMs < cutoffMs).reduce((sum, each) => sum + each.units, 0);
    const acknowledgedUnits = acknowledged.reduce((sum, each) => sum + each.units, 0);
    // The loss measured: how long before the kill the oldest decision missing from the ledger was acknowledged
    // (the ledger keeps counts, so the missing ones are taken to be the newest).
    let kept = 0;
    const oldestLost = acknowledged.find((each) => (kept += each.units) > recorded);
    console.log(
      `SIGKILL: ${acknowledgedUnits} readings acknowledged, ${recorded} in the ledger; ` +
        (oldestLost ? `the oldest lost was acknowledged ${killedAtMs - oldestLost.atMs} ms before the kill` : 'none lost') +
        ` (bound ${FLUSH_INTERVAL_MS + SIGKILL_MARGIN_MS} ms)`,
    );
    expect(mustBeRecorded).toBeGreaterThan(0);
    expect(recorded, `every reading acknowledged before ${killedAtMs - cutoffMs} ms before the kill`).toBeGreaterThanOrEqual(mustBeRecorded);
    // Nothing beyond what was decided: the acknowledged, and at most the one request (2 readings) in flight
    // whose answer the kill cut.
    expect(recorded).toBeLessThanOrEqual(acknowledgedUnits + 2);
  }, 240_000);

  it.each(['throw', 'reject'])('a planted bug (%s) is logged, everything is flushed, and the process exits 1', async (bug) => {
    const { env } = await storage(Boolean(databaseUrl));
    const key = await ingestKey(env);
    const started = await start(process.execPath, ['--import', 'tsx', 'test/e2e/crashingService.child.ts'], env);
    const accepted = await ingest(started.baseUrl, key, 20);
    started.child.stdin!.write(`${bug}\n`);
    expect(await started.exited).toMatchObject({ code: 1 });
    expect(started.output()).toMatch(bug === 'throw' ? /uncaught exception/ : /unhandled rejection/);
    expect(started.output()).toContain('a bug planted by the test');
    expect(await ledgerAdmitted(env)).toBe(accepted);
    expect(isAlive(started.child.pid!)).toBe(false);
  }, 240_000);
});
