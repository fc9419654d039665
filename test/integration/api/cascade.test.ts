// What the console reads to lay a tenant's limits out: the dimension catalog, the platform defaults, the
// cascade per dimension with the level that wins and why, the tenant search, and trends per allowance.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnEachStorage } from '../../support/databases.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';
import { createLedgerRecorder } from '../../../src/ledger/ledgerRecorder.ts';
import { openApiHarness, type ApiHarness } from './apiHarness.ts';

type Cascade = Array<{ dimension: string; winner: string; reason: string; value: Record<string, number | null>; levels: Array<{ source: string; value: Record<string, number | null> | null; unusable: boolean }> }>;

describeOnEachStorage('GraphQL cascade and console reads on $name', (target) => {
  let api: ApiHarness;
  let operator: string;

  async function mutate(name: string, input: string): Promise<void> {
    const response = await api.gql<Record<string, { __typename: string }>>(operator, `mutation { ${name}(input: { ${input} }) { __typename } }`);
    expect(response.data?.[name]?.__typename, JSON.stringify(response)).toBe('Applied');
  }

  beforeAll(async () => {
    api = await openApiHarness(target);
    operator = await api.token('OPERATOR');
    await mutate('setPlatformDefault', 'dimension: EGRESS, ratePerSecond: 300, burst: 600, reason: "launch"');
    await mutate('defineTier', 'tierId: "silver", name: "Silver"');
    await mutate('setTierLimit', 'tierId: "silver", dimension: INGEST, ratePerSecond: 2000, burst: 4000');
    await mutate('registerTenant', 'tenantId: "acme", tierId: "silver"');
    await mutate('registerTenant', 'tenantId: "acme-labs"');
    await mutate('registerTenant', 'tenantId: "initech"');
    await mutate('setTenantOverride', 'tenantId: "acme", dimension: PROVISIONING, ratePerSecond: 40, reason: "rollout"');
    await api.projections.waitForCaughtUp();
  }, 180_000);
  afterAll(() => api?.dispose());

  it('lays out every level of each dimension with the winner and the reason', async () => {
    const response = await api.gql<{ tenant: { cascade: Cascade } }>(
      operator,
      '{ tenant(id: "acme") { cascade { dimension winner reason value { ratePerSecond burst ceiling } levels { source unusable value { ratePerSecond burst ceiling } } } } }',
    );
    expect(response.errors).toBeUndefined();
    const byDimension = new Map(response.data!.tenant.cascade.map((each) => [each.dimension, each]));
    expect(byDimension.size).toBe(6);
    expect(byDimension.get('PROVISIONING')).toMatchObject({ winner: 'TENANT_OVERRIDE', reason: 'tenant override', value: { ratePerSecond: 40, burst: 1000 } });
    expect(byDimension.get('INGEST')).toMatchObject({ winner: 'TIER', reason: 'no override → tier', value: { ratePerSecond: 2000, burst: 4000 } });
    expect(byDimension.get('EGRESS')).toMatchObject({ winner: 'PLATFORM_DEFAULT', reason: 'no override → tier value not set → platform default' });
    expect(byDimension.get('AI_INFERENCE')!.reason).toBe('no override → tier value not set → platform default not set → shipped default');
    expect(byDimension.get('EGRESS')!.levels.map((level) => [level.source, level.value?.ratePerSecond ?? null])).toEqual([
      ['TENANT_OVERRIDE', null],
      ['TIER', null],
      ['PLATFORM_DEFAULT', 300],
      ['SHIPPED_DEFAULT', expect.any(Number)],
    ]);
    const initech = await api.gql<{ tenant: { cascade: Cascade } }>(operator, '{ tenant(id: "initech") { cascade { dimension reason } } }');
    expect(initech.data!.tenant.cascade.find((each) => each.dimension === 'INGEST')!.reason).toBe('no override → no tier → platform default not set → shipped default');
  });

  it('agrees with effectiveLimits on every dimension', async () => {
    const response = await api.gql<{ tenant: { cascade: Cascade; effectiveLimits: Array<{ dimension: string; source: string; value: Record<string, number | null> }> } }>(
      operator,
      '{ tenant(id: "acme") { cascade { dimension winner value { ratePerSecond burst ceiling } } effectiveLimits { dimension source value { ratePerSecond burst ceiling } } } }',
    );
    const { cascade, effectiveLimits } = response.data!.tenant;
    expect(cascade.map((each) => [each.dimension, each.winner, each.value])).toEqual(effectiveLimits.map((each) => [each.dimension, each.source, each.value]));
  });

  it('answers the catalog and the platform defaults to any signed-in role', async () => {
    const viewer = await api.token('TENANT_VIEWER', 'acme');
    const response = await api.gql<{ dimensions: Array<{ dimension: string; unit: string; shippedDefault: { ratePerSecond: number | null } }>; platformDefaults: Array<{ dimension: string; value: { ratePerSecond: number } | null }> }>(
      viewer,
      '{ dimensions { dimension unit kind overLimit allowances shippedDefault { ratePerSecond burst ceiling } } platformDefaults { dimension value { ratePerSecond burst } } }',
    );
    expect(response.errors).toBeUndefined();
    expect(response.data!.dimensions.find((each) => each.dimension === 'INGEST')).toMatchObject({ unit: 'readings', shippedDefault: { ratePerSecond: 1000 } });
    expect(response.data!.platformDefaults.find((each) => each.dimension === 'EGRESS')!.value).toEqual({ ratePerSecond: 300, burst: 600 });
    expect(response.data!.platformDefaults.find((each) => each.dimension === 'INGEST')!.value).toBeNull();
  });

  it('a tenant role cannot read another tenant’s cascade', async () => {
    const viewer = await api.token('TENANT_VIEWER', 'initech');
    const response = await api.gql(viewer, '{ tenant(id: "acme") { cascade { dimension } } }');
    expect(response.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('searches tenants by a part of their id, ignoring case', async () => {
    const response = await api.gql<{ tenants: { edges: Array<{ node: { id: string } }> } }>(operator, '{ tenants(search: "ACME") { edges { node { id } } } }');
    expect(response.data!.tenants.edges.map((edge) => edge.node.id)).toEqual(['acme', 'acme-labs']);
  });

  it('reads a trend for one allowance or summed over all', async () => {
    const at = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 120_000);
    const fromSecond = at.getTime() / 1000;
    await createLedgerRecorder(api.store).record(
      [
        admissionSummary({ fromSecond, allowance: 'HTTP', admittedUnits: 10, rejectedUnits: 4 }),
        admissionSummary({ fromSecond, allowance: 'LIVE', admittedUnits: 5, shedUnits: 3 }),
      ],
      [],
    );
    await api.projections.waitForCaughtUp();
    const query = (allowance: string) =>
      api.gql<{ shedTrend: Array<{ admitted: number; shed: number; rejected: number }> }>(
        operator,
        `{ shedTrend(tenantId: "acme", dimension: INGEST, from: "${new Date(at.getTime() - 60_000).toISOString()}", to: "${new Date(at.getTime() + 60_000).toISOString()}", bucket: MINUTE${allowance}) { admitted shed rejected } }`,
      );
    expect((await query(', allowance: LIVE')).data!.shedTrend).toEqual([{ admitted: 5, shed: 3, rejected: 0 }]);
    expect((await query('')).data!.shedTrend).toEqual([{ admitted: 15, shed: 3, rejected: 4 }]);
  });
});
