// The ingest front door in the whole service: startService wires it to the Governor that the control plane
// feeds and whose recorder appends to the ledger; the trend projection reads the ledger. A tenant's limit set
// through the control plane decides at the front door, and what the front door refused or dropped reaches
// the ledger and shedTrend.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerIngestCredential } from '../../src/doors/pipeline/credentials.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import { shedTrend } from '../../src/metrics/trends/shedTrend.ts';
import type { Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { serviceModes, startServiceIn, type RunningService } from '../support/serviceModes.ts';

const modes = serviceModes('e2e_ingest');

describe.each(modes)('ingest front door in the service ($name)', (mode) => {
  let running: RunningService;
  let service: Service;
  let baseUrl: string;
  let key: string;

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
    await service.projections.waitForCaughtUp();
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
    // The first request teaches the Governor acme's ceilings (metered at the platform default meanwhile).
    expect((await post('/v1/ingest/acme', readings(1))).status).toBe(202);
    await service.governor.loadsSettled();

    const refused = await post('/v1/ingest/acme', readings(50));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-scope')).toBe('tenant');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('5');

    const dropped = await post('/v1/integrations/acme/ttn', Array.from({ length: 40 }, (_, i) => ({ devEUI: `${i}` })));
    expect(dropped.status).toBe(202);
    expect(await dropped.json()).toMatchObject({ accepted: 0, dropped: 40 });

    await service.governor.flush();
    const events = await service.store.readStream(ADMISSIONS_STREAM);
    const entries = events.flatMap((event) => (event.type === 'AdmissionsRecorded' ? (event.data as { entries: Record<string, unknown>[] }).entries : []));
    const acme = (allowance: string, field: string) =>
      entries.filter((entry) => entry.tenantId === 'acme' && entry.allowance === allowance).reduce((sum, entry) => sum + (entry[field] as number), 0);
    expect(acme('HTTP', 'rejectedUnits')).toBe(50);
    expect(acme('INTEGRATIONS', 'shedUnits')).toBe(40);

    await service.projections.waitForCaughtUp();
    const trend = await shedTrend(service.db, {
      tenantId: 'acme',
      dimension: 'INGEST',
      from,
      to: new Date(Date.now() + 60_000),
      bucket: 'MINUTE',
    });
    const total = (field: 'shed' | 'rejected') => trend.reduce((sum, point) => sum + point[field], 0);
    expect(total('shed')).toBe(40);
    expect(total('rejected')).toBe(50);
  });
});
