// Every number a client sends to the admission API and the lease door is bounded before it is metered or
// recorded (issue 34, items 9 and 10): `units: 0.5` is refused naming the field (it was tallied as half a
// shed unit); a count over the burst never fits and is never granted; a lease summary out of its bounds
// (`"seconds": 1e12`, `admittedUnits: 1e12`, a bad tenant ID) is refused alone with its field and nothing of
// it reaches the ledger; a summary with an id posted three times is in the ledger once. The whole service,
// over HTTP, with its ledger on PostgreSQL when the run has it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/token.ts';
import { ADMISSIONS_STREAM } from '../../src/ledger/catalog/admissions.ts';
import type { AdmissionSummary } from '../../src/governance/index.ts';
import type { Service } from '../../src/service.ts';
import { OPERATOR } from '../support/controlPlaneHarness.ts';
import { readWholeLedger } from '../support/readLedger.ts';
import { serviceModes, startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { admissionSummaryReader } from '../../src/ledger/catalog/summaryRefs.ts';

const mode = serviceModes('e2e_client_bounds').at(-1)!;
const SECRET = 'client-bounds-e2e-secret-0123456789abcdef';

describe(`bounded client values in the service (${mode.name})`, () => {
  let running: RunningService;
  let service: Service;
  let baseUrl: string;
  let serviceToken: string;

  beforeAll(async () => {
    running = await startServiceIn({ ...mode, env: { ...mode.env, GOVERNANCE_JWT_SECRET: SECRET } });
    ({ service, baseUrl } = running);
    serviceToken = await mintToken({ secret: SECRET, role: 'SERVICE', sub: 'connector', ttl: 600 });
    expect(await service.controlPlane.defineTier(OPERATOR, { tierId: 'standard', name: 'Standard' })).toMatchObject({ status: 'applied' });
    for (const tenantId of ['acme', 'leased']) {
      expect(await service.controlPlane.registerTenant(OPERATOR, { tenantId, tierId: 'standard' })).toMatchObject({ status: 'applied' });
    }
    const applied = await service.controlPlane.setTenantOverride(OPERATOR, {
      tenantId: 'acme',
      dimension: 'AI_INFERENCE',
      ratePerSecond: 5,
      burst: 10,
      reason: 'e2e: the issue 34 limit',
    });
    expect(applied).toMatchObject({ status: 'applied' });
    await service.projections.waitForCaughtUp();
  }, 180_000);

  afterAll(async () => {
    await running?.stop();
  });

  const post = (path: string, body: unknown) =>
    fetch(`${baseUrl}${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${serviceToken}` },
    });

  async function ledgerSummaries(tenantId: string): Promise<AdmissionSummary[]> {
    await service.governor.flush();
    return (await readWholeLedger(service.store))
      .filter((event) => event.stream === ADMISSIONS_STREAM && event.type === 'AdmissionsRecorded')
      .flatMap(admissionSummaryReader())
      .filter((entry) => entry.tenantId === tenantId);
  }

  it('refuses fractional units naming the field, and answers a count over the burst as never fitting', async () => {
    // Both decided in-process first, so the tenant's limits are known when the items below arrive.
    await post('/v1/admissions', { items: [{ tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1 }] });
    await service.governor.loadsSettled();
    const response = await post('/v1/admissions', {
      items: [
        { tenantId: 'acme', dimension: 'AI_INFERENCE', units: 0.5 },
        { tenantId: 'acme', dimension: 'AI_INFERENCE', units: 999_999_999 },
        { tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1_000_000_001 },
        { tenantId: 'acme', dimension: 'AI_INFERENCE', units: 11 },
        { tenantId: 'acme', dimension: 'AI_INFERENCE', units: 1 },
      ],
    });
    expect(response.status).toBe(200);
    const { decisions } = (await response.json()) as { decisions: Record<string, unknown>[] };
    expect(decisions[0]).toEqual({ error: { field: 'units', reason: 'a whole number from 0 to 1000000000' } });
    expect(decisions[1]).toMatchObject({ admitted: false, neverFits: true, burst: 10 });
    expect(decisions[2]).toEqual({ error: { field: 'units', reason: 'a whole number from 0 to 1000000000' } });
    expect(decisions[3]).toMatchObject({ admitted: false, neverFits: true });
    // The count over the burst took nothing from the bucket.
    expect(decisions[4]).toMatchObject({ admitted: true });

    const summaries = (await ledgerSummaries('acme')).filter((each) => each.dimension === 'AI_INFERENCE');
    const total = (field: 'admittedUnits' | 'shedUnits' | 'rejectedUnits') => summaries.reduce((sum, each) => sum + each[field], 0);
    expect(total('admittedUnits')).toBe(2);
    expect(total('shedUnits')).toBe(0);
    // Never fitting is tallied as rejected, whole units only.
    expect(total('rejectedUnits')).toBe(999_999_999 + 11);
    for (const each of summaries) for (const value of [each.admittedUnits, each.shedUnits, each.rejectedUnits]) expect(Number.isInteger(value)).toBe(true);
  });

  it('refuses each lease summary out of bounds with its field, records the others, and a summary with an id once however often it comes', async () => {
    const nowSecond = Math.floor(Date.now() / 1000);
    const good = {
      tenantId: 'leased',
      dimension: 'EGRESS',
      allowance: 'CONNECTORS',
      fromSecond: nowSecond - 2,
      seconds: 1,
      admittedUnits: 7,
      admittedCount: 7,
      refusedUnits: 3,
      refusedCount: 3,
      hitSeconds: 1,
    };
    const withId = { ...good, id: 'b9d5a3c4-6f10-4b8e-9a55-3d1c3a0e7f01' };
    const bad = [
      [{ ...good, seconds: 1_000_000_000_000 }, 'seconds'],
      [{ ...good, admittedUnits: 1e12 }, 'admittedUnits'],
      [{ ...good, tenantId: 'bad tenant!' }, 'tenantId'],
      [{ ...good, admittedUnits: 0.5 }, 'admittedUnits'],
      [{ ...good, fromSecond: 1 }, 'fromSecond'],
      [{ ...good, fromSecond: nowSecond + 3600 }, 'fromSecond'],
      [{ ...good, fromSecond: nowSecond - 61, seconds: 60 }, 'seconds'],
      [{ ...good, hitSeconds: 2 }, 'hitSeconds'],
      [{ ...good, id: 'not an id!' }, 'id'],
    ] as const;

    for (let round = 0; round < 3; round++) {
      const response = await post('/v1/leases', { leases: [], summaries: [withId, ...bad.map(([summary]) => summary)] });
      expect(response.status).toBe(200);
      const answer = (await response.json()) as { grants: unknown[]; summaries: ({ recorded: true } | { error: { field: string; reason: string } })[] };
      expect(answer.summaries[0]).toEqual({ recorded: true });
      expect(answer.summaries.slice(1).map((each) => ('error' in each ? each.error.field : 'recorded'))).toEqual(bad.map(([, field]) => field));
      for (const each of answer.summaries.slice(1)) expect('error' in each && each.error.reason.length > 0).toBe(true);
    }
    // Without an id (a client older than ids): recorded as sent, each time.
    expect(((await (await post('/v1/leases', { summaries: [good] })).json()) as { summaries: unknown[] }).summaries).toEqual([{ recorded: true }]);

    const summaries = await ledgerSummaries('leased');
    // The one with an id once, the one without once; nothing of the refused ones.
    expect(summaries.map((each) => [each.fromSecond, each.seconds, each.admittedUnits, each.rejectedUnits + each.shedUnits])).toEqual([
      [nowSecond - 2, 1, 7, 3],
      [nowSecond - 2, 1, 7, 3],
    ]);
  });

  it('answers a lease it cannot read with a typed error and grants nothing for it', async () => {
    const response = await post('/v1/leases', {
      leases: [
        { tenantId: 'bad tenant!', dimension: 'EGRESS', allowance: 'CONNECTORS', want: 1 },
        { tenantId: 'leased', dimension: 'EGRESS', allowance: 'CONNECTORS', want: 0.5 },
        { tenantId: 'leased', dimension: 'EGRESS', allowance: 'CONNECTORS', want: 1 },
      ],
    });
    const { grants } = (await response.json()) as { grants: Record<string, unknown>[] };
    expect(grants[0]).toMatchObject({ granted: 0, error: { field: 'tenantId' } });
    expect(grants[1]).toMatchObject({ granted: 0, error: { field: 'want' } });
    expect(grants[2]).toMatchObject({ granted: 1 });
  });
});
