// A network cut between the service and its PostgreSQL: the database runs in a network namespace of its own,
// reached over a veth link (test/support/networkNamespaces.ts), and the link is taken down under traffic, so packets
// vanish as across a failed switch (no refusal, no reset). Meanwhile the service keeps admitting on the
// ceilings it holds (every ingest answered 202, promptly), /readyz answers 503 promptly, and the Governor keeps
// its ledger batches in memory within the stated bound (MAX_PENDING_SUMMARIES summaries, docs/faults.md: no
// tally clamped in a cut this short). Once the link is back, the batches are appended: the ledger holds exactly
// the readings answered 202.
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSettings } from '../../src/config.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { createServer, listen } from '../../src/http-server/server.ts';
import { startService, type Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { networkCutMissing, startNetworkNamespace, type NetworkNamespace } from '../support/networkNamespaces.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../support/privateServers.ts';
import { readWholeLedger } from '../support/readLedger.ts';
import { waitFor } from '../support/waitFor.ts';
import { admissionSummaryReader } from '../../src/ledger/catalog/summaryRefs.ts';

const SUITE_BUDGET_MS = 170_000;
/** How long the link stays down: past the ingest door's 30 s key cache TTL, so cached keys are served stale. */
const CUT_MS = 40_000;
/** Every ingest answer during the cut comes within this (the door never waits on the unreachable database long). */
const ANSWER_WITHIN_MS = 3_000;
/** /readyz answers within this during the cut. */
const READYZ_WITHIN_MS = 3_000;

const missing = networkCutMissing();
const netns = missing ? undefined : await startNetworkNamespace();
const pg = netns
  ? await startPrivatePostgres({ netns: { name: netns.name, ...netns.paths[0]! } }).catch(async (error: unknown) => {
      await netns.dispose();
      throw error;
    })
  : undefined;
if (missing) console.warn(`PostgreSQL network cut suite skipped: ${missing}`);
else if (!pg) {
  await netns?.dispose();
  console.warn('PostgreSQL network cut suite skipped: no private PostgreSQL (see the warning above)');
}

describe.skipIf(!pg)('the service cut off from PostgreSQL by a network cut (veth link down)', () => {
  const postgres = pg as PrivatePostgres;
  const link = netns as NetworkNamespace;
  let dataDir: string;
  let service: Service;
  let server: Server;
  let baseUrl: string;
  let key: string;
  let acceptedReadings = 0;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'gl-cut-'));
    service = await startService(readSettings({ DATABASE_URL: postgres.url, GOVERNANCE_DATA_DIR: dataDir, GOVERNANCE_JWT_SECRET: 'cut-suite-secret-0123456789abcdef0123456789' }), pino({ level: 'silent' }));
    server = createServer(service, service.routes);
    baseUrl = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'standard' })).toMatchObject({ status: 'applied' });
    expect(
      await service.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 1_000_000, burst: 1_000_000, reason: 'cut suite' }),
    ).toMatchObject({ status: 'applied' });
    await service.projections.waitForCaughtUp();
    const registered = await registerIngestCredential(service.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    key = registered.key;
    expect((await ingest()).status).toBe(202);
    await service.governor.loadsSettled();
  }, 120_000);

  afterAll(async () => {
    await link.heal();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await service?.close();
    await postgres.dispose();
    await link.dispose();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  async function ingest(): Promise<Response> {
    const response = await fetch(`${baseUrl}/v1/ingest/acme`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-device-key': key },
      body: JSON.stringify({ readings: [{ deviceId: 'pump-1', measurements: { temperature: 21.5, pressure: 1.2 } }] }),
      signal: AbortSignal.timeout(60_000),
    });
    if (response.status === 202) acceptedReadings += 2;
    return response;
  }

  it('admits on the ceilings it holds while cut off, says so on /readyz, and appends what it buffered once the link is back', async () => {
    const problems: string[] = [];
    let slowest = 0;
    let answered = 0;
    let stop = false;
    const loop = (async () => {
      while (!stop) {
        const started = Date.now();
        const response = await ingest();
        slowest = Math.max(slowest, Date.now() - started);
        if (response.status !== 202) problems.push(`ingest: ${response.status} ${await response.text()}`);
        else await response.arrayBuffer();
        answered++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      await waitFor(() => answered >= 20, { timeoutMs: 30_000, description: 'traffic before the cut' });
      await link.cut();
      const cutAt = Date.now();
      const failuresBefore = service.governor.stats().recordFailures;
      // /readyz tells the cut, promptly.
      let readyzMs = 0;
      await waitFor(
        async () => {
          const started = Date.now();
          const ready = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(30_000) });
          readyzMs = Math.max(readyzMs, Date.now() - started);
          return ready.status === 503;
        },
        { timeoutMs: 30_000, intervalMs: 200, description: '/readyz 503 during the cut' },
      );
      const answeredAtCut = answered;
      await waitFor(() => Date.now() - cutAt >= CUT_MS, { timeoutMs: CUT_MS + 5_000, intervalMs: 500, description: 'the cut to last' });
      const answeredDuringCut = answered - answeredAtCut;
      const stats = service.governor.stats();
      await link.heal();
      const healedAt = Date.now();
      await waitFor(async () => (await fetch(`${baseUrl}/readyz`)).status === 200, { timeoutMs: 60_000, intervalMs: 200, description: '/readyz 200 after the cut' });
      const readyAt = Date.now();
      stop = true;
      await loop;
      await service.governor.flush();
      const appendedAt = Date.now();
      console.info(
        `PostgreSQL cut of ${CUT_MS} ms: ${answeredDuringCut} ingest requests answered meanwhile (slowest ${slowest} ms), /readyz answered within ${readyzMs} ms, ` +
          `record failures ${stats.recordFailures - failuresBefore}, clamped tallies ${stats.clampedTallies}; /readyz 200 ${readyAt - healedAt} ms after the link came back, ` +
          `everything appended ${appendedAt - healedAt} ms after`,
      );
      expect(problems).toEqual([]);
      expect(answeredDuringCut).toBeGreaterThan(10);
      expect(slowest).toBeLessThan(ANSWER_WITHIN_MS);
      expect(readyzMs).toBeLessThan(READYZ_WITHIN_MS);
      expect(stats.clampedTallies).toBe(0);
    } finally {
      stop = true;
      await link.heal();
      await loop;
    }
    const ledger = await readWholeLedger(service.store);
    const admitted = ledger
      .filter((event) => event.stream === ADMISSIONS_STREAM && event.type === 'AdmissionsRecorded')
      .flatMap(admissionSummaryReader())
      .filter((entry) => entry.tenantId === 'acme' && entry.dimension === 'INGEST' && entry.allowance === 'HTTP')
      .reduce((sum, entry) => sum + entry.admittedUnits, 0);
    expect(admitted).toBe(acceptedReadings);
  }, SUITE_BUDGET_MS);
});
