// The ingest front door in the whole service: startService wires it to the Governor that the control plane
// feeds and whose recorder appends to the ledger; the trend projection reads the ledger. A tenant's limit set
// through the control plane decides at the front door, and what the front door refused or dropped reaches
// the ledger and shedTrend. A request that could never fit is answered 413 and counted as rejected; readings
// charged before a failed credential are counted as unauthenticated, in the ledger, the trends, GraphQL and
// /metrics, never as admitted; invented tenant names never take a named /metrics label.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { registerIngestCredential } from '../../src/auth/ingestKeys.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import { shedTrend } from '../../src/metrics/trends/shedTrend.ts';
import type { Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { describeOnEachServiceMode, startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { serviceClient } from '../support/serviceClient.ts';
import { VISIBLE_WITHIN_MS } from '../support/readLedger.ts';
import { waitFor } from '../support/waitFor.ts';
import { admissionSummaryReader } from '../../src/ledger/catalog/summaryRefs.ts';


describeOnEachServiceMode('e2e_ingest', 'ingest front door in the service ($name)', (mode, modes) => {
  let running: RunningService;
  let service: Service;
  let baseUrl: string;
  let key: string;

  // On a PostgreSQL shared with other suites their open transactions hold the projections' reads back
  // (test/support/readLedger.ts): wait as long as a reader of the ledger does, not the 10 s default.
  const caughtUp = () => service.projections.waitForCaughtUp({ timeoutMs: VISIBLE_WITHIN_MS });

  beforeAll(async () => {
    running = await startServiceIn(mode);
    ({ service, baseUrl } = running);

    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'standard' })).toMatchObject({ status: 'applied' });
    expect(
      await service.controlPlane.setTenantOverride(OPERATOR, {
        tenantId: 'acme',
        dimension: 'INGEST',
        ratePerSecond: 5,
        burst: 10,
        reason: 'e2e: a small ceiling to hit',
      }),
    ).toMatchObject({ status: 'applied' });
    await caughtUp();
    const registered = await registerIngestCredential(service.db, { tenantId: 'acme', kind: 'tenant', subject: null });
    if (registered.status !== 'registered') throw new Error(registered.message);
    key = registered.key;
  }, 180_000);

  afterAll(async () => {
    await running?.stop();
  });

  const post = (route: string, body: unknown) =>
    fetch(`${baseUrl}${route}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', 'x-device-key': key } });
  const readings = (n: number) => ({ readings: Array.from({ length: n }, (_, i) => ({ measurements: { [`m${i}`]: i } })) });

  it('the control plane\'s ceiling decides at the front door; refused and dropped units reach the ledger and shedTrend', async () => {
    const from = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    // The override set above reaches the Governor when its projection commits (a NOTIFY, then one read; within
    // 1 s, docs/governance-model.md "When a limit takes effect"): from then on it holds from acme's first
    // request. A zero-unit look waits for that without spending anything.
    await waitFor(() => service.governor.admit({ tenant: 'acme', dimension: 'INGEST', allowance: 'HTTP', units: 0, at: Date.now() }).burst === 10, {
      timeoutMs: 10_000,
      description: "acme's override in the Governor",
    });
    // The whole burst of 10 and 8 more at the same moment: one is admitted, the other told to retry. Each is
    // metered at its arrival, and 8 readings take 1.6 s to refill at 5/s: sent together and both answered within
    // that, they arrived closer together than that, so both cannot fit. On a machine so busy that the exchange
    // took longer, they may have arrived that far apart, and the bucket may rightly admit both.
    const sentMs = performance.now();
    const [whole, more] = await Promise.all([post('/v1/ingest/acme', readings(10)), post('/v1/ingest/acme', readings(8))]);
    const exchangeMs = performance.now() - sentMs;
    const statuses = [whole.status, more.status].sort();
    if (exchangeMs < 1_600) expect(statuses).toEqual([202, 429]);
    else expect([[202, 429], [202, 202]], `${exchangeMs.toFixed(0)} ms`).toContainEqual(statuses);
    const refused = whole.status === 429 ? whole : more.status === 429 ? more : undefined;
    const refusedUnits = whole.status === 429 ? 10 : more.status === 429 ? 8 : 0;
    if (refused) {
      expect(refused.headers.get('x-ratelimit-scope')).toBe('tenant');
      expect(refused.headers.get('x-ratelimit-limit')).toBe('5');
    }
    // Over the burst: no wait would admit it, so 413 naming the burst and the size, and no Retry-After.
    const neverFits = await post('/v1/ingest/acme', readings(50));
    expect(neverFits.status).toBe(413);
    expect(neverFits.headers.get('retry-after')).toBeNull();
    expect(await neverFits.json()).toMatchObject({ units: 50, burst: 10 });

    const uplinks = Array.from({ length: 8 }, (_, i) => ({ devEUI: `${i}` }));
    expect((await post('/v1/integrations/acme/ttn', uplinks)).status).toBe(202);
    const dropped = await post('/v1/integrations/acme/ttn', uplinks);
    expect(dropped.status).toBe(202);
    expect(await dropped.json()).toMatchObject({ accepted: 0, dropped: 8 });

    await service.governor.flush();
    const events = await service.store.readStream(ADMISSIONS_STREAM);
    const entries = events.flatMap(admissionSummaryReader()) as unknown as Record<string, unknown>[];
    const acme = (allowance: string, field: string) =>
      entries.filter((entry) => entry.tenantId === 'acme' && entry.allowance === allowance).reduce((sum, entry) => sum + (entry[field] as number), 0);
    expect(acme('HTTP', 'rejectedUnits')).toBe(refusedUnits + 50);
    expect(acme('INTEGRATIONS', 'shedUnits')).toBe(8);

    await caughtUp();
    const trend = await shedTrend(service.db, {
      tenantId: 'acme',
      dimension: 'INGEST',
      from,
      to: new Date(Date.now() + 60_000),
      bucket: 'MINUTE',
    });
    const total = (field: 'shed' | 'rejected') => trend.reduce((sum, point) => sum + point[field], 0);
    expect(total('shed')).toBe(8);
    expect(total('rejected')).toBe(refusedUnits + 50);
  });

  it('readings charged before a failed credential are unauthenticated, not admitted: ledger, shedTrend, GraphQL and /metrics', async () => {
    const from = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    await service.governor.flush();
    await caughtUp();
    const trendOf = () => shedTrend(service.db, { tenantId: 'acme', dimension: 'INGEST', from, to: new Date(Date.now() + 60_000), bucket: 'MINUTE' });
    const sum = (points: Awaited<ReturnType<typeof trendOf>>, field: 'admitted' | 'unauthenticated' | 'unauthenticatedMessages') =>
      points.reduce((total, point) => total + point[field], 0);
    const before = await trendOf();
    const metricsBefore = await (await fetch(`${baseUrl}/metrics`)).text();

    // Slept long enough for the bucket of 10 to refill: each of these is charged, then refused for its key.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    for (const headers of [{}, { 'x-device-key': 'not-a-key' }] as Record<string, string>[]) {
      const response = await fetch(`${baseUrl}/v1/ingest/acme`, { method: 'POST', body: JSON.stringify(readings(3)), headers });
      expect(response.status).toBe(401);
    }
    await service.governor.flush();
    const events = await service.store.readStream(ADMISSIONS_STREAM);
    const entries = events.flatMap(admissionSummaryReader()) as unknown as Record<string, unknown>[];
    const unauthenticated = entries
      .filter((entry) => entry.tenantId === 'acme' && entry.allowance === 'HTTP')
      .reduce((total, entry) => total + ((entry.unauthenticatedUnits as number | undefined) ?? 0), 0);
    expect(unauthenticated).toBe(6);

    await caughtUp();
    const after = await trendOf();
    expect(sum(after, 'unauthenticated') - sum(before, 'unauthenticated')).toBe(6);
    expect(sum(after, 'unauthenticatedMessages') - sum(before, 'unauthenticatedMessages')).toBe(2);
    expect(sum(after, 'admitted')).toBe(sum(before, 'admitted'));

    const client = await serviceClient(running);
    const trend = await client.as('OPERATOR')<{ shedTrend: { admitted: number; unauthenticated: number; unauthenticatedMessages: number }[] }>(
      `query($from: DateTime!, $to: DateTime!) { shedTrend(tenantId: "acme", dimension: INGEST, from: $from, to: $to, bucket: MINUTE) {
         admitted unauthenticated unauthenticatedMessages } }`,
      { from: from.toISOString(), to: new Date(Date.now() + 60_000).toISOString() },
    );
    expect(trend.shedTrend.reduce((total, point) => total + point.unauthenticated, 0)).toBe(sum(after, 'unauthenticated'));
    expect(trend.shedTrend.reduce((total, point) => total + point.admitted, 0)).toBe(sum(after, 'admitted'));

    const metric = (text: string, name: string) =>
      text
        .split('\n')
        .filter((line) => line.startsWith(`devicechain_ingest_governance_${name}{`) && line.includes('allowance="HTTP"') && line.includes('tenant="acme"'))
        .reduce((total, line) => total + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    const metricsAfter = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(metric(metricsAfter, 'unauthenticated_units_total') - metric(metricsBefore, 'unauthenticated_units_total')).toBe(6);
    expect(metric(metricsAfter, 'admitted_units_total')).toBe(metric(metricsBefore, 'admitted_units_total'));
  });

  // Labels do not depend on the storage mode: run once, it sends 2,000 requests.
  it.runIf(mode === modes[0])('2,000 invented tenant names never take the named /metrics labels: they count under _other', async () => {
    const agent = Array.from({ length: 2000 }, (_, i) => `invented-${i}`);
    // In parallel waves of 50 over keep-alive connections; every one is charged, then refused for its key.
    for (let wave = 0; wave < agent.length; wave += 50) {
      const statuses = await Promise.all(
        agent.slice(wave, wave + 50).map(async (name) => (await fetch(`${baseUrl}/v1/ingest/${name}`, { method: 'POST', body: JSON.stringify(readings(1)) })).status),
      );
      expect(statuses.every((status) => status === 401 || status === 429)).toBe(true);
    }
    await service.governor.flush();
    const text = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(text).not.toMatch(/tenant="invented-/);
    expect(text).not.toMatch(/tenant="\(overflow\)"/);
    expect(text).toMatch(/devicechain_ingest_governance_unauthenticated_units_total\{[^}]*tenant="_other"[^}]*\} [1-9]/);
    // The registered tenant keeps its name.
    expect(text).toMatch(/tenant="acme"/);
  });
});
