// Efficiency and protection: batched reads for a page of tenants, page-size and query-shape limits, cursor
// paging of the history, and faults masked outside development.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnEachStorage } from '../../support/databases.ts';
import { openApiHarness, type ApiHarness } from './apiHarness.ts';

const TENANTS = 40;

describeOnEachStorage('GraphQL batching and limits on $name', (target) => {
  let api: ApiHarness;
  let operator: string;

  // Opening a database takes long on a busy machine (hence the hook's timeout); the tests themselves are quick.
  beforeAll(async () => {
    api = await openApiHarness(target);
    operator = await api.token('OPERATOR');
    await api.controlPlane.defineTier({ id: 'seed', role: 'OPERATOR' }, { tierId: 'basic', name: 'Basic' });
    for (let i = 0; i < TENANTS; i++) {
      const tenantId = `t${String(i).padStart(3, '0')}`;
      await api.controlPlane.registerTenant({ id: 'seed', role: 'OPERATOR' }, { tenantId, tierId: i % 2 === 0 ? 'basic' : null });
      await api.controlPlane.setTenantOverride({ id: 'seed', role: 'OPERATOR' }, { tenantId, dimension: 'INGEST', ratePerSecond: 100 + i, reason: 'seed' });
    }
    await api.projections.waitForCaughtUp();
  }, 180_000);
  afterAll(() => api?.dispose());

  it('reads a page of 500 tenants with their limits and backlogs in at most 4 SQL statements', async () => {
    api.statements.count = 0;
    const response = await api.gql<{ tenants: { edges: Array<{ node: { id: string; effectiveLimits: Array<{ source: string }>; commandBacklog: { undelivered: number } } }> } }>(
      operator,
      '{ tenants(first: 500) { edges { node { id effectiveLimits { source } commandBacklog { undelivered } } } } }',
    );
    expect(response.errors).toBeUndefined();
    const edges = response.data!.tenants.edges;
    expect(edges).toHaveLength(TENANTS);
    expect(edges[7]!.node.effectiveLimits).toHaveLength(6);
    expect(edges[7]!.node.effectiveLimits[0]!.source).toBe('TENANT_OVERRIDE');
    expect(edges.every((edge) => edge.node.commandBacklog.undelivered === 0)).toBe(true);
    expect(api.statements.count).toBeLessThanOrEqual(4);
  });

  it('answers repeated effective-limit reads from memory until a control-plane commit changes them', async () => {
    const query = '{ effectiveLimits(tenantId: "t001") { dimension source value { ratePerSecond } } }';
    type Limits = { effectiveLimits: Array<{ dimension: string; source: string; value: { ratePerSecond: number | null } }> };
    const ingest = (response: { data?: Limits | null }) => response.data!.effectiveLimits.find((limit) => limit.dimension === 'INGEST');
    expect(ingest(await api.gql<Limits>(operator, query))).toEqual({ dimension: 'INGEST', source: 'TENANT_OVERRIDE', value: { ratePerSecond: 101 } });
    api.statements.count = 0;
    for (let i = 0; i < 5; i++) await api.gql<Limits>(operator, query);
    expect(api.statements.count).toBe(0);

    await api.controlPlane.clearTenantOverride({ id: 'seed', role: 'OPERATOR' }, { tenantId: 't001', dimension: 'INGEST', reason: 'back to the tier' });
    await api.projections.waitForCaughtUp();
    expect(ingest(await api.gql<Limits>(operator, query))).toEqual({ dimension: 'INGEST', source: 'SHIPPED_DEFAULT', value: { ratePerSecond: 1000 } });
  });

  it('refuses a page larger than 500 with a typed error', async () => {
    const response = await api.gql(operator, '{ tenants(first: 501) { edges { node { id } } } }');
    expect(response.errors?.[0]?.extensions).toMatchObject({ code: 'PAGE_SIZE_OUT_OF_RANGE', field: 'first', max: 500 });
    // Passed as a variable, `first` escapes the cost estimate; the field's own cap still holds.
    const history = await api.gql(operator, 'query($first: Int) { limitHistory(first: $first) { edges { cursor } } }', { first: 100_000 });
    expect(history.errors?.[0]?.extensions?.code).toBe('PAGE_SIZE_OUT_OF_RANGE');
  });

  it('pages tenants and the history forwards with opaque cursors', async () => {
    type Connection = { edges: Array<{ cursor: string; node: { id?: string; position?: string } }>; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
    const seen: string[] = [];
    let after: string | null = null;
    for (;;) {
      const response: { data?: { tenants: Connection } | null } = await api.gql<{ tenants: Connection }>(
        operator,
        'query($after: String) { tenants(first: 15, after: $after) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }',
        { after },
      );
      const page = response.data!.tenants;
      seen.push(...page.edges.map((edge) => edge.node.id!));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
      expect(after).not.toMatch(/^t\d+$/);
    }
    expect(seen).toHaveLength(TENANTS);
    expect(new Set(seen).size).toBe(TENANTS);

    const positions: string[] = [];
    after = null;
    for (;;) {
      const response: { data?: { limitHistory: Connection } | null } = await api.gql<{ limitHistory: Connection }>(
        operator,
        'query($after: String) { limitHistory(first: 25, after: $after, dimension: INGEST) { edges { cursor node { position } } pageInfo { hasNextPage endCursor } } }',
        { after },
      );
      const page = response.data!.limitHistory;
      positions.push(...page.edges.map((edge) => edge.node.position!));
      if (!page.pageInfo.hasNextPage) break;
      after = page.pageInfo.endCursor;
    }
    const onePage = await api.gql<{ limitHistory: Connection }>(operator, '{ limitHistory(first: 500, dimension: INGEST) { edges { node { position } } } }');
    expect(positions).toEqual(onePage.data!.limitHistory.edges.map((edge) => edge.node.position));
    expect(positions.length).toBeGreaterThanOrEqual(TENANTS);

    const bad = await api.gql(operator, '{ limitHistory(after: "not a cursor!") { edges { cursor } } }');
    expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_CURSOR');
  });

  it('rejects queries too deep, too costly or with too many aliases before running them', async () => {
    const page = `tenants(first: 500) { edges { cursor node { id tier { id name limits { dimension value { ratePerSecond burst ceiling } } }
      effectiveLimits { dimension source tierId value { ratePerSecond burst ceiling } } overrides { dimension expiresAt value { ratePerSecond burst ceiling } }
      commandBacklog { tenantId undelivered ceiling source } } } pageInfo { hasNextPage endCursor } }`;
    expect((await api.gql(operator, `{ ${page} }`)).errors).toBeUndefined();
    const tooCostly = await api.gql(operator, `{ a: ${page} b: ${page} }`);
    expect(tooCostly.errors?.[0]?.message).toMatch(/cost limit/i);
    expect(tooCostly.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COSTLY');

    const tooDeep = await api.gql(operator, '{ viewer { a { b { c { d { e { f { g { h { i { j { k } } } } } } } } } } } }');
    expect(tooDeep.errors?.map((error) => error.message).join(' ')).toMatch(/depth limit of 10 exceeded/i);
    expect(tooDeep.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_DEEP');

    const aliases = Array.from({ length: 20 }, (_, i) => `a${i}: viewer { id }`).join(' ');
    const tooManyAliases = await api.gql(operator, `{ ${aliases} }`);
    expect(tooManyAliases.errors?.[0]?.message).toMatch(/aliases/i);
    expect(tooManyAliases.errors?.[0]?.extensions?.code).toBe('TOO_MANY_ALIASES');
  });

  it('answers a query over the cost limit with its own code and advice, not as a syntax error', async () => {
    const answer = await api.gql(operator, '{ topShedders(first: 100000) { tenantId } }');
    const [error] = answer.errors ?? [];
    expect(error?.extensions).toMatchObject({ code: 'QUERY_TOO_COSTLY', limit: 150_000 });
    expect(error?.message).not.toMatch(/syntax/i);
    expect(error?.message).toMatch(/^Query Cost limit of 150000 exceeded, found \d+\. Ask for smaller pages/);
  });

  // Last: it breaks the read model on purpose.
  it('masks a fault outside development: the client learns nothing of the database', async () => {
    await api.db.exec('DROP TABLE gl_tier_limits');
    const response = await api.gql(operator, '{ tiers { id limits { dimension } } }');
    expect(response.errors).toEqual([expect.objectContaining({ message: 'Unexpected error.', extensions: { code: 'INTERNAL_SERVER_ERROR' } })]);
    expect(JSON.stringify(response)).not.toMatch(/gl_tier_limits|relation|does not exist/);
  });
});
