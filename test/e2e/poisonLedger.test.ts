// Nothing stored can stop the service (issue 34): the poison events of the attack, appended straight to the
// ledger while the service is down (as older doors wrote them), and the service started again on them, twice. Each time it answers /readyz 200 within 10 s of the start (readiness counts a projection more than 1 s
// behind, beyond its pace, as unready, and the events are older than that: 200 means the trend projection got
// past them), the quarantine lists exactly those events with
// their reasons, /metrics counts them, `governance projections quarantine` prints them, and the summaries
// around them are in the trend read model.
// - a summary spanning 56 years: two MQTT messages with `sent-at` 1 (ms) and now - 10 s merged into one;
// - a summary spanning 30 days (`sent-at` 30 days ago);
// - a `POST /v1/leases` summary of `"seconds": 1000000000000`.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/spawnTs.ts';
import { readSettings } from '../../src/config.ts';
import { migrate } from '../../src/db/migrate.ts';
import { openDb } from '../../src/db/open.ts';
import { createServer, listen } from '../../src/http-server/server.ts';
import { createLedgerRecorder } from '../../src/ledger/ledgerRecorder.ts';
import { openEventStore } from '../../src/ledger/openEventStore.ts';
import { listQuarantine } from '../../src/ledger/quarantine.ts';
import { MAX_FORGIVEN_PACE_SECONDS } from '../../src/ledger/projectionReadiness.ts';
import type { ProjectionLag } from '../../src/ledger/projectionRunner.ts';
import type { AdmissionSummary } from '../../src/governance/index.ts';
import { startService, type Service } from '../../src/service.ts';
import { ADMISSION_TRENDS, bucketRows } from '../../src/metrics/index.ts';
import { admissionSummary } from '../support/admissionSummaries.ts';
import { serviceModes, type ServiceMode } from '../support/serviceModes.ts';
import { waitFor } from '../support/waitFor.ts';

const READY_WITHIN_MS = 10_000;
/** The service's readiness bound in this suite (GOVERNANCE_READY_MAX_LAG_SECONDS). */
const READY_MAX_LAG_SECONDS = 1;

interface Started {
  service: Service;
  baseUrl: string;
  /** ms from the start of startService to the first /readyz 200. */
  readyAfterMs: number;
  /** ms from the start of startService to listening. */
  listeningAfterMs: number;
  stop(): Promise<void>;
}

/** Starts the service on `env` and waits (at most READY_WITHIN_MS past the deadline, to report) for /readyz 200. */
async function startAndAwaitReady(env: Record<string, string>): Promise<Started> {
  const startedAt = performance.now();
  const service = await startService(readSettings(env), pino({ level: 'silent' }));
  const server = createServer(service, service.routes);
  const baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
  const listeningAfterMs = performance.now() - startedAt;
  const stop = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await service.close();
  };
  let last = '';
  for (;;) {
    const response = await fetch(`${baseUrl}/readyz`).catch((error: unknown) => ({ status: 0, text: async () => String(error) }));
    last = `${response.status} ${await response.text()}`;
    if (response.status === 200) break;
    if (performance.now() - startedAt > READY_WITHIN_MS * 2) {
      await stop();
      throw new Error(`not ready ${Math.round(performance.now() - startedAt)} ms after the start; /readyz: ${last}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { service, baseUrl, readyAfterMs: performance.now() - startedAt, listeningAfterMs, stop };
}

/** The CLI on embedded storage unless `env` names a database. */
const cli = (args: string[], env: Record<string, string>) => runCli(args, { DATABASE_URL: '', EVENTSTORE_URL: '', ...env });

const suite = (mode: ServiceMode) => {
  let dataDir: string;
  let env: Record<string, string>;
  const nowSecond = Math.floor(Date.now() / 1_000);
  const poison: Record<string, AdmissionSummary> = {
    fiftySixYears: admissionSummary({ allowance: 'BACKLOG', fromSecond: 0, seconds: nowSecond - 10 + 1, admittedUnits: 2, admittedMessages: 2 }),
    thirtyDays: admissionSummary({ allowance: 'BACKLOG', fromSecond: nowSecond - 30 * 86_400, seconds: 30 * 86_400 - 10, admittedUnits: 2, admittedMessages: 2 }),
    lease: admissionSummary({
      tenantId: 'globex',
      dimension: 'API_REQUESTS',
      allowance: null,
      fromSecond: nowSecond - 5,
      seconds: 1_000_000_000_000,
      admittedUnits: 1_000_000_000_000,
      admittedMessages: 1,
    }),
  };
  /** Event ids of the poison events, in ledger order. */
  let poisonIds: string[];

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-poison-'));
    await mode.prepare();
    env = { GOVERNANCE_DATA_DIR: dataDir, ...mode.env, GOVERNANCE_READY_MAX_LAG_SECONDS: String(READY_MAX_LAG_SECONDS) };
    // The service has run on this database before (as in the attack: the poison arrived, and the restarts died
    // on it); that first start also compiles the worker thread's sources, which a start of the built service
    // never does.
    await (await startAndAwaitReady(env)).stop();
    // Straight to the ledger, the service down: each record is one event, healthy summaries around the poison.
    const db = await openDb(readSettings(env));
    const store = await openEventStore(db, undefined);
    try {
      await migrate(db);
      const recorder = createLedgerRecorder(store);
      const record = (summary: AdmissionSummary) => recorder.record([summary], []);
      await record(admissionSummary({ tenantId: 'before', fromSecond: nowSecond - 20, admittedUnits: 3 }));
      await record(poison.fiftySixYears!);
      await record(admissionSummary({ tenantId: 'between', fromSecond: nowSecond - 19, admittedUnits: 4 }));
      await record(poison.thirtyDays!);
      await record(poison.lease!);
      await record(admissionSummary({ tenantId: 'after', fromSecond: nowSecond - 18, admittedUnits: 5 }));
      // On PostgreSQL a read shows them once every older transaction on the server has ended.
      let events = await store.readAll('start', 100, { types: ['AdmissionsRecorded'] });
      await waitFor(async () => (events = await store.readAll('start', 100, { types: ['AdmissionsRecorded'] })).length === 6, {
        timeoutMs: 30_000,
        description: 'the six events to be readable',
      });
      poisonIds = [events[1]!.id, events[3]!.id, events[4]!.id];
    } finally {
      await store.close();
      await db.close();
    }
    // Older than the readiness bound (1 s) plus the trend projection's pace (2 s, which readiness allows it) before
    // the service starts: a projection stuck on them is unready from its first answer.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
  }, 180_000);

  afterAll(async () => {
    await mode.dispose();
    await rm(dataDir, { recursive: true, force: true });
  });

  const expectQuarantinedAndProjected = async ({ service, baseUrl }: Started) => {
    const quarantined = await listQuarantine(service.db);
    expect(quarantined.map((event) => [event.projection, event.id, event.type])).toEqual(poisonIds.map((id) => ['admission-trends', id, 'AdmissionsRecorded']));
    expect(quarantined.map((event) => event.reason)).toEqual([
      `summary 0: a summary spans ${poison.fiftySixYears!.seconds} s, more than the 86400 s a trend splits across minutes`,
      `summary 0: a summary spans ${poison.thirtyDays!.seconds} s, more than the 86400 s a trend splits across minutes`,
      'summary 0: a summary spans 1000000000000 s, more than the 86400 s a trend splits across minutes',
    ]);
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(metrics).toContain('devicechain_ingest_projection_quarantined_events{projection="admission-trends"} 3');
    expect(metrics).toContain('devicechain_ingest_projection_quarantined_events{projection="unresolved-admissions"} 0');
    const { rows } = await service.db.query<{ tenant_id: string; admitted_units: string }>(
      `SELECT tenant_id, sum(admitted_units)::text AS admitted_units FROM ${bucketRows(ADMISSION_TRENDS, 'MINUTE')} AS minutes GROUP BY tenant_id ORDER BY tenant_id`,
    );
    expect(rows).toEqual([
      { tenant_id: 'after', admitted_units: '5' },
      { tenant_id: 'before', admitted_units: '3' },
      { tenant_id: 'between', admitted_units: '4' },
    ]);
    // Every projection reaches the head within its own readiness bound, counted from the age of what it still has
    // to apply: /readyz holds the trends to a second past their pace, the demand (paced 15 s, niced) to its
    // readyLagSeconds past the forgiven pace, so ready does not mean applied.
    const lags = await service.projections.lag();
    const boundSeconds = (lag: ProjectionLag) =>
      Math.max(READY_MAX_LAG_SECONDS, lag.readyLagSeconds ?? 0) + Math.min(lag.paceSeconds ?? 0, MAX_FORGIVEN_PACE_SECONDS) - lag.secondsBehind;
    const boundMs = Math.max(0, ...lags.filter((lag) => lag.pending).map(boundSeconds)) * 1_000;
    let pending: string[] = [];
    await waitFor(async () => (pending = (await service.projections.lag()).filter((lag) => lag.pending).map((lag) => lag.projection)).length === 0, {
      timeoutMs: boundMs,
      intervalMs: 250,
      description: 'every projection at the head of the ledger',
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}; still pending: ${pending.join(', ')}`);
    });
  };

  it('starts on them ready within 10 s, quarantines exactly them with their reasons, and projects the rest', { timeout: 180_000 }, async () => {
    const first = await startAndAwaitReady(env);
    try {
      console.log(`${mode.name}: listening ${Math.round(first.listeningAfterMs)} ms, ready ${Math.round(first.readyAfterMs)} ms after the start`);
      expect(first.readyAfterMs).toBeLessThanOrEqual(READY_WITHIN_MS);
      await expectQuarantinedAndProjected(first);
    } finally {
      await first.stop();
    }
  });

  it('starts again on them ready within 10 s, quarantining nothing twice', { timeout: 180_000 }, async () => {
    const again = await startAndAwaitReady(env);
    try {
      console.log(`${mode.name}: listening ${Math.round(again.listeningAfterMs)} ms, ready again ${Math.round(again.readyAfterMs)} ms after the start`);
      expect(again.readyAfterMs).toBeLessThanOrEqual(READY_WITHIN_MS);
      await expectQuarantinedAndProjected(again);
    } finally {
      await again.stop();
    }
  });

  it('lists them with `governance projections quarantine`', { timeout: 180_000 }, async () => {
    const listed = await cli(['projections', 'quarantine', 'admission-trends', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trim().split('\n').map((line) => JSON.parse(line) as { eventId: string; projection: string; reason: string });
    expect(lines.map((line) => line.eventId)).toEqual(poisonIds);
    expect(lines.every((line) => line.projection === 'admission-trends' && /more than the 86400 s/.test(line.reason))).toBe(true);
    const text = await cli(['projections', 'quarantine'], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('3 event(s) in the quarantine of any projection');
  });
};

for (const mode of serviceModes('e2e_poison')) {
  describe(`a ledger holding poison events (${mode.name})`, () => suite(mode));
}
