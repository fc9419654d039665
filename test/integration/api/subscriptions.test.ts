// Subscriptions over SSE: notices arrive after the projection commits, only for the tenant subscribed to,
// and a tenant role cannot open one for another tenant.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMISSIONS_STREAM } from '../../../src/ledger/catalog/admissions.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { waitFor } from '../../support/waitFor.ts';
import { openApiHarness, type ApiHarness } from './apiHarness.ts';

const OPERATOR = { id: 'ops', role: 'OPERATOR' } as const;

interface SseSubscription {
  /** The next `next` event's payload, or 'complete' when the server ended the stream. */
  next(): Promise<{ data?: Record<string, unknown> | null; errors?: Array<{ extensions?: { code?: string } }> } | 'complete'>;
  close(): Promise<void>;
}

async function subscribe(api: ApiHarness, token: string, query: string): Promise<SseSubscription> {
  const response = await api.yoga.fetch('http://localhost/graphql', {
    method: 'POST',
    headers: { accept: 'text/event-stream', 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  return {
    async next() {
      for (;;) {
        const end = buffer.indexOf('\n\n');
        if (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event === 'complete') return 'complete';
          if (data) return JSON.parse(data);
          continue; // a keep-alive comment
        }
        const { value, done } = await reader.read();
        if (done) return 'complete';
        buffer += value;
      }
    },
    close: () => reader.cancel(),
  };
}

describeOnEachStorage('GraphQL subscriptions on $name', (target) => {
  let api: ApiHarness;

  // Opening a database takes long on a busy machine (hence the hook's timeout); the tests themselves are quick.
  beforeAll(async () => {
    api = await openApiHarness(target);
    await api.controlPlane.defineTier(OPERATOR, { tierId: 'gold', name: 'Gold' });
    await api.controlPlane.defineTier(OPERATOR, { tierId: 'silver', name: 'Silver' });
    await api.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'gold' });
    await api.controlPlane.registerTenant(OPERATOR, { tenantId: 'globex', tierId: 'silver' });
    await api.projections.waitForCaughtUp();
  }, 180_000);
  afterAll(() => api?.dispose());

  it('tells a tenant about changes to its own limits, its tier and the platform default, and nothing else', async () => {
    const subscription = await subscribe(
      api,
      await api.token('TENANT_VIEWER', 'acme'),
      'subscription { limitChanged(tenantId: "acme") { tenantId change { kind actor reason tenantId tierId dimension value { ratePerSecond } } } }',
    );
    await waitFor(() => (api.events.listeners.get('limitChanged') ?? 0) > 0, { description: 'the subscription to listen' });

    await api.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'globex', dimension: 'INGEST', ratePerSecond: 1, reason: 'not yours' });
    await api.controlPlane.setTierLimit(OPERATOR, { tierId: 'silver', dimension: 'INGEST', ratePerSecond: 2 });
    await api.controlPlane.setTierLimit(OPERATOR, { tierId: 'gold', dimension: 'INGEST', ratePerSecond: 3000 });
    await api.controlPlane.setTenantOverride(OPERATOR, { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 9000, reason: 'import' });
    await api.controlPlane.setPlatformDefault(OPERATOR, { dimension: 'EGRESS', ratePerSecond: 150 });

    const received = [await subscription.next(), await subscription.next(), await subscription.next()];
    expect(received).toEqual([
      { data: { limitChanged: { tenantId: 'acme', change: { kind: 'TIER_LIMIT_SET', actor: 'ops', reason: null, tenantId: null, tierId: 'gold', dimension: 'INGEST', value: { ratePerSecond: 3000 } } } } },
      { data: { limitChanged: { tenantId: 'acme', change: { kind: 'OVERRIDE_SET', actor: 'ops', reason: 'import', tenantId: 'acme', tierId: null, dimension: 'INGEST', value: { ratePerSecond: 9000 } } } } },
      { data: { limitChanged: { tenantId: 'acme', change: { kind: 'PLATFORM_DEFAULT_SET', actor: 'ops', reason: null, tenantId: null, tierId: null, dimension: 'EGRESS', value: { ratePerSecond: 150 } } } } },
    ]);
    // Published after the history's commit: the change announced is already in the history.
    const history = await api.gql<{ limitHistory: { edges: Array<{ node: { kind: string } }> } }>(
      await api.token('AUDITOR'),
      '{ limitHistory(first: 1) { edges { node { kind } } } }',
    );
    expect(history.data!.limitHistory.edges[0]!.node.kind).toBe('PLATFORM_DEFAULT_SET');
    await subscription.close();
    await waitFor(() => api.events.listeners.get('limitChanged') === 0, { description: 'the subscription to stop listening' });
  });

  it('streams sheds of the tenant subscribed to, refusals on the per-message charge (no units) included', async () => {
    const subscription = await subscribe(
      api,
      await api.token('AUDITOR'),
      'subscription { sheds(tenantId: "acme") { tenantId dimension allowance at seconds shedUnits rejectedUnits rejectedMessages } }',
    );
    await waitFor(() => (api.events.listeners.get('sheds:acme') ?? 0) > 0, { description: 'the subscription to listen' });
    const second = Date.UTC(2026, 0, 5, 10, 0, 0) / 1000;
    const entry = (tenantId: string, shedUnits: number, rejectedMessages = 0) => ({
      tenantId,
      dimension: 'INGEST',
      allowance: 'HTTP',
      fromSecond: second,
      seconds: 1,
      admittedUnits: 10,
      admittedMessages: 1,
      shedUnits,
      shedMessages: shedUnits > 0 ? 1 : 0,
      rejectedUnits: 0,
      rejectedMessages,
      hitSeconds: 1,
    });
    await api.store.append(ADMISSIONS_STREAM, [
      { type: 'AdmissionsRecorded', data: { entries: [entry('globex', 99), entry('acme', 0), entry('acme', 0, 5), entry('acme', 7)] } },
    ]);
    const shed = { tenantId: 'acme', dimension: 'INGEST', allowance: 'HTTP', at: '2026-01-05T10:00:00.000Z', seconds: 1 };
    expect(await subscription.next()).toEqual({ data: { sheds: { ...shed, shedUnits: 0, rejectedUnits: 0, rejectedMessages: 5 } } });
    expect(await subscription.next()).toEqual({ data: { sheds: { ...shed, shedUnits: 7, rejectedUnits: 0, rejectedMessages: 0 } } });
    await subscription.close();
  });

  it('refuses a tenant role a subscription to another tenant, with FORBIDDEN and no data', async () => {
    const viewer = await api.token('TENANT_VIEWER', 'acme');
    for (const query of ['subscription { limitChanged(tenantId: "globex") { tenantId } }', 'subscription { sheds(tenantId: "globex") { shedUnits } }']) {
      const subscription = await subscribe(api, viewer, query);
      const first = await subscription.next();
      expect(first, query).not.toBe('complete');
      if (first === 'complete') continue;
      expect(first.errors?.map((error) => error.extensions?.code), query).toEqual(['FORBIDDEN']);
      expect(first.data ?? null, query).toBeNull();
      expect(await subscription.next()).toBe('complete');
    }
    expect(api.events.listeners.get('sheds:globex') ?? 0).toBe(0);
  });
});
