// /readyz under steady ingest traffic and no control-plane change: the control-plane projections have
// nothing to apply, so they are not behind however long admission summaries flow past them; the
// admission-trends projection, which does apply them, keeps within the bound beyond its 2 s pace (a test
// fails when it falls further behind). Bounded by a short readiness bound (GOVERNANCE_READY_MAX_LAG_SECONDS=5)
// and a few times that much traffic, instead of minutes: a lag measured by the age of other types' events
// would pass the bound within seconds. On PostgreSQL, the admission-trends projection is then held back (its
// tables locked) and /readyz must name it once it is behind by more than the bound and its pace.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import { MAX_FORGIVEN_PACE_SECONDS } from '../../src/ledger/projectionReadiness.ts';
import { quoteIdent } from '../../src/db/postgres.ts';
import { ADMISSION_TRENDS, familyTables } from '../../src/metrics/trends/rollupFamily.ts';
import { admissionTrendsProjection } from '../../projections/admissionTrends.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { serviceModes, startServiceIn, type RunningService } from '../support/serviceModes.ts';

const MAX_LAG_SECONDS = 5;
/** What readiness forgives of the admission-trends projection's lag: its pace (2 s), never more than MAX_FORGIVEN_PACE_SECONDS. */
const TRENDS_PACE_SECONDS = Math.min(admissionTrendsProjection.livePaceMs! / 1_000, MAX_FORGIVEN_PACE_SECONDS);
const TRAFFIC_MS = 4 * MAX_LAG_SECONDS * 1_000;
// One mode is enough for the claim (the projections and readiness are the same code in both); PostgreSQL
// when there is one, as the service runs in production.
const mode = serviceModes('e2e_ready').at(-1)!;

describe(`readiness under ingest traffic (${mode.name})`, () => {
  let running: RunningService;
  let key: string;

  beforeAll(async () => {
    running = await startServiceIn({ ...mode, env: { ...mode.env, GOVERNANCE_READY_MAX_LAG_SECONDS: String(MAX_LAG_SECONDS) } });
    const { service } = running;
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'standard' })).toMatchObject({ status: 'applied' });
    await service.projections.waitForCaughtUp();
    const registered = await registerIngestCredential(service.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    key = registered.key;
  }, 180_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('stays 200 while admission summaries flow, and the admission-trends projection keeps within the bound beyond its pace', { timeout: 180_000 }, async () => {
    const { service, baseUrl } = running;
    const before = (await service.store.readStream(ADMISSIONS_STREAM)).length;
    const answers: string[] = [];
    let worstTrendsSecondsBehind = 0;
    const startedAt = Date.now();
    let posted = 0;
    while (Date.now() - startedAt < TRAFFIC_MS) {
      const ingest = await fetch(`${baseUrl}/v1/ingest/acme`, {
        method: 'POST',
        body: JSON.stringify({ readings: [{ measurements: { t: posted } }] }),
        headers: { 'content-type': 'application/json', 'x-device-key': key },
      });
      expect(ingest.status).toBe(202);
      posted++;
      // Each flush appends an admission summary: a steady stream of events no control-plane projection applies.
      if (posted % 5 === 0) await service.governor.flush();
      const ready = await fetch(`${baseUrl}/readyz`);
      answers.push(`${ready.status} ${await ready.text()}`);
      const trends = (await service.projections.lag()).find((lag) => lag.projection === 'admission-trends');
      if (trends?.pending) worstTrendsSecondsBehind = Math.max(worstTrendsSecondsBehind, trends.secondsBehind);
    }
    console.log(`admission-trends: at most ${worstTrendsSecondsBehind.toFixed(2)} s behind (bound ${MAX_LAG_SECONDS} s + pace ${TRENDS_PACE_SECONDS} s)`);
    await service.governor.flush();
    // The traffic reached the ledger, well spread over the whole period.
    expect((await service.store.readStream(ADMISSIONS_STREAM)).length - before).toBeGreaterThan(posted / 5 - 1);
    // No projection fell behind the bound: not the control-plane ones (nothing of theirs to apply), and not
    // admission-trends, which applies these summaries and may lag by its pace and the bound, no more.
    expect(answers.filter((answer) => !answer.startsWith('200'))).toEqual([]);
    expect(worstTrendsSecondsBehind).toBeLessThanOrEqual(MAX_LAG_SECONDS + TRENDS_PACE_SECONDS);
    // Every control-plane projection is at the head: nothing of its own pending.
    await service.projections.waitForCaughtUp({ timeoutMs: 30_000 });
    for (const lag of await service.projections.lag()) expect(lag).toMatchObject({ pending: false, secondsBehind: 0 });
  });

  it.skipIf(!('DATABASE_URL' in mode.env))(
    '/readyz names the admission-trends projection once it is held back by more than the bound and its pace, and is 200 when it catches up',
    { timeout: 180_000 },
    async () => {
      const { service, baseUrl } = running;
      // Hold the projection back as a slow database would: its tables locked against writes by a transaction
      // left open, so its next page waits while summaries keep arriving.
      const locker = new pg.Client({ connectionString: mode.env.DATABASE_URL });
      await locker.connect();
      let stop = false;
      let posted = 0;
      const traffic = (async () => {
        while (!stop) {
          const ingest = await fetch(`${baseUrl}/v1/ingest/acme`, {
            method: 'POST',
            body: JSON.stringify({ readings: [{ measurements: { t: posted } }] }),
            headers: { 'content-type': 'application/json', 'x-device-key': key },
          });
          await ingest.arrayBuffer();
          posted++;
          if (posted % 5 === 0) await service.governor.flush();
        }
      })();
      try {
        await locker.query(`SET search_path TO ${quoteIdent(mode.env.GOVERNANCE_DB_SCHEMA!)}`);
        await locker.query('BEGIN');
        await locker.query(`LOCK TABLE ${familyTables(ADMISSION_TRENDS).map(quoteIdent).join(', ')} IN EXCLUSIVE MODE`);
        const lockedAtMs = Date.now();
        // admission-demand (the limit preview's read model) applies the same summaries, read in the same global
        // order: while the held-back page's transaction is open, it may be named behind too, and that is true.
        const behind = /^\{"status":"not ready","reasons":\["projections behind: admission-trends \d+s( \([^)]*\))?(, admission-demand \d+s( \([^)]*\))?)?"\]\}$/;
        let answer = '';
        let unreadyAtMs = 0;
        // The first summary appended after the lock waits; it is behind by more than the bound beyond the pace
        // MAX_LAG_SECONDS + TRENDS_PACE_SECONDS after it was appended (within a flush interval of the lock), and
        // /readyz must say so then. The 60 s deadline only ends a test that would otherwise wait for ever.
        for (;;) {
          const ready = await fetch(`${baseUrl}/readyz`);
          answer = await ready.text();
          if (ready.status === 503) {
            unreadyAtMs = Date.now();
            break;
          }
          if (Date.now() - lockedAtMs > 60_000) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(answer).toMatch(behind);
        const unreadyAfterSeconds = (unreadyAtMs - lockedAtMs) / 1_000;
        console.log(`admission-trends held back: /readyz 503 after ${unreadyAfterSeconds.toFixed(2)} s (bound ${MAX_LAG_SECONDS} s + pace ${TRENDS_PACE_SECONDS} s)`);
        // Unready by the bound and the pace after the first summary held back, which is appended within a flush
        // interval (1 s) of the lock; 1 s more for a /readyz poll (100 ms apart) and its lag read on a busy machine.
        expect(unreadyAfterSeconds).toBeLessThanOrEqual(MAX_LAG_SECONDS + TRENDS_PACE_SECONDS + 2);
      } finally {
        await locker.query('ROLLBACK').catch(() => {});
        await locker.end();
      }
      // Released, it applies what waited and is ready again.
      const releasedAtMs = Date.now();
      for (;;) {
        const ready = await fetch(`${baseUrl}/readyz`);
        await ready.arrayBuffer();
        if (ready.status === 200) break;
        expect(Date.now() - releasedAtMs, 'ready again after the release').toBeLessThan(60_000);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      stop = true;
      await traffic;
    },
  );
});
