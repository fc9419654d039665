// What an operator and a tenant admin do against the running service over HTTP: issue, list, use and revoke
// ingest keys while the service runs on embedded storage, and meet one rule for refusals (a mutation answers
// a Forbidden payload with HTTP 200, a read answers FORBIDDEN in errors).
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { serviceClient, type ServiceClient } from '../support/serviceClient.ts';
import { waitFor } from '../support/waitFor.ts';

const EMBEDDED = { name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} };

interface IngestKey {
  keyId: string;
  tenantId: string;
  kind: string;
  subject: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}
const KEY_FIELDS = 'keyId tenantId kind subject createdAt lastUsedAt revokedAt';
const ISSUE = `mutation($input: IssueIngestKeyInput!) { issueIngestKey(input: $input) {
  __typename ... on IngestKeyIssued { key ingestKey { ${KEY_FIELDS} } } ... on Error { message } ... on InputError { field } } }`;
const REVOKE = `mutation($input: RevokeIngestKeyInput!) { revokeIngestKey(input: $input) {
  __typename ... on IngestKeyRevoked { ingestKey { ${KEY_FIELDS} } } ... on Error { message } } }`;
const LIST = `query($tenantId: ID!) { ingestKeys(tenantId: $tenantId) { ${KEY_FIELDS} } }`;

describe('operators over HTTP', () => {
  let running: RunningService;
  let api: ServiceClient;

  beforeAll(async () => {
    running = await startServiceIn(EMBEDDED);
    api = await serviceClient(running);
    const operator = api.as('OPERATOR');
    await operator('mutation { registerTenant(input: { tenantId: "acme" }) { __typename } }');
    await operator('mutation { registerTenant(input: { tenantId: "globex" }) { __typename } }');
  }, 180_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('issues a key once, lists it without the key, marks it used, and revokes it', async () => {
    const admin = await api.token('TENANT_ADMIN', 'acme');
    const issued = await api.gql<{ issueIngestKey: { __typename: string; key: string; ingestKey: IngestKey } }>(admin, ISSUE, {
      input: { tenantId: 'acme', deviceId: 'pump-1' },
    });
    expect(issued.status).toBe(200);
    const { key, ingestKey } = issued.data!.issueIngestKey;
    expect(issued.data!.issueIngestKey.__typename).toBe('IngestKeyIssued');
    expect(key).toMatch(/^[\w-]{43}$/);
    expect(ingestKey).toMatchObject({ tenantId: 'acme', kind: 'DEVICE', subject: 'pump-1', lastUsedAt: null, revokedAt: null, keyId: expect.stringMatching(/^[0-9a-f]{12}$/) });

    const operator = await api.token('OPERATOR');
    const tenantWide = await api.gql<{ issueIngestKey: { __typename: string; ingestKey: IngestKey } }>(operator, ISSUE, { input: { tenantId: 'acme' } });
    expect(tenantWide.data!.issueIngestKey.ingestKey.kind).toBe('TENANT');

    const listed = await api.gql<{ ingestKeys: IngestKey[] }>(admin, LIST, { tenantId: 'acme' });
    expect(listed.data!.ingestKeys.map((each) => each.keyId).sort()).toEqual([ingestKey.keyId, tenantWide.data!.issueIngestKey.ingestKey.keyId].sort());
    expect(JSON.stringify(listed)).not.toContain(key);

    const ingest = await fetch(`${running.baseUrl}/v1/ingest/acme`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-device-key': key },
      body: JSON.stringify({ readings: [{ deviceId: 'pump-1', measurements: { t: 1 } }] }),
    });
    expect([202, 429]).toContain(ingest.status);
    let used: IngestKey | undefined;
    await waitFor(
      async () => {
        used = (await api.gql<{ ingestKeys: IngestKey[] }>(admin, LIST, { tenantId: 'acme' })).data!.ingestKeys.find((each) => each.keyId === ingestKey.keyId);
        return used?.lastUsedAt !== null;
      },
      { timeoutMs: 20_000, intervalMs: 100, description: 'lastUsedAt after the key was presented' },
    );

    const revoked = await api.gql<{ revokeIngestKey: { __typename: string; ingestKey: IngestKey } }>(admin, REVOKE, { input: { tenantId: 'acme', keyId: ingestKey.keyId } });
    expect(revoked.data!.revokeIngestKey.__typename).toBe('IngestKeyRevoked');
    expect(revoked.data!.revokeIngestKey.ingestKey.revokedAt).not.toBeNull();
    const unknown = await api.gql<{ revokeIngestKey: { __typename: string } }>(admin, REVOKE, { input: { tenantId: 'acme', keyId: '000000000000' } });
    expect(unknown.data!.revokeIngestKey.__typename).toBe('UnknownIngestKey');
  }, 60_000);

  it('refuses a key for an unregistered tenant, and another tenant\'s admin with a Forbidden payload or FORBIDDEN', async () => {
    const operator = await api.token('OPERATOR');
    const unregistered = await api.gql<{ issueIngestKey: { __typename: string; field: string } }>(operator, ISSUE, { input: { tenantId: 'initech' } });
    expect(unregistered.data!.issueIngestKey).toMatchObject({ __typename: 'UnknownTenant', field: 'tenantId' });
    expect((await api.gql<{ ingestKeys: IngestKey[] }>(operator, LIST, { tenantId: 'initech' })).data!.ingestKeys).toEqual([]);

    const globexAdmin = await api.token('TENANT_ADMIN', 'globex');
    const mutation = await api.gql<{ issueIngestKey: { __typename: string } }>(globexAdmin, ISSUE, { input: { tenantId: 'acme' } });
    expect(mutation.status).toBe(200);
    expect(mutation.errors).toBeUndefined();
    expect(mutation.data!.issueIngestKey.__typename).toBe('Forbidden');
    const read = await api.gql(globexAdmin, LIST, { tenantId: 'acme' });
    expect(read.status).toBe(200);
    expect(read.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(read.data ?? null).toBeNull();
    const viewer = await api.gql<{ revokeIngestKey: { __typename: string } }>(await api.token('TENANT_VIEWER', 'acme'), REVOKE, { input: { tenantId: 'acme', keyId: '000000000000' } });
    expect(viewer.data!.revokeIngestKey.__typename).toBe('Forbidden');
  });

  it('states the rule for refusals in the schema, and every mutation payload can be Forbidden', async () => {
    type Introspected = {
      __schema: { mutationType: { description: string | null; fields: Array<{ name: string; type: { ofType: { name: string; kind: string; possibleTypes: Array<{ name: string }> | null } } }> } };
      __type: { description: string };
    };
    const { __schema, __type } = await api.as('OPERATOR')<Introspected>(`{
      __schema { mutationType { description fields { name type { ofType { name kind possibleTypes { name } } } } } }
      __type(name: "Forbidden") { description } }`);
    expect(__schema.mutationType.description).toMatch(/Forbidden.*HTTP 200/s);
    expect(__schema.mutationType.description).toMatch(/FORBIDDEN/);
    expect(__type.description).toMatch(/every mutation/i);
    const missing = __schema.mutationType.fields.filter((field) => field.type.ofType.kind !== 'UNION' || !field.type.ofType.possibleTypes!.some((type) => type.name === 'Forbidden'));
    expect(missing.map((field) => field.name)).toEqual([]);
    expect(__schema.mutationType.fields.map((field) => field.name)).toEqual(expect.arrayContaining(['issueIngestKey', 'revokeIngestKey']));
  });

  it('names metrics devicechain_ingest_governance_... by default, and the dashboard names only metrics /metrics exports', async () => {
    const exported = await (await fetch(`${running.baseUrl}/metrics`)).text();
    expect(exported).toContain('# TYPE devicechain_ingest_governance_shed_units_total counter');
    expect(exported).not.toContain('governance_governance');
    const families = new Map([...exported.matchAll(/^# TYPE (\S+) (\w+)$/gm)].map((match) => [match[1]!, match[2]!]));
    const dashboard = JSON.parse(await readFile(new URL('../../dashboards/governance.json', import.meta.url), 'utf8')) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    const named = dashboard.panels.flatMap((panel) =>
      panel.targets.flatMap((target) => [...target.expr.replaceAll('${service}', 'ingest').matchAll(/devicechain_\w+/g)].map((match) => match[0])),
    );
    expect(named.length).toBeGreaterThan(10);
    const missing = named.filter((name) => {
      if (families.has(name)) return false;
      const histogram = /^(.*)_(bucket|sum|count)$/.exec(name);
      return !(histogram && families.get(histogram[1]!) === 'histogram');
    });
    expect(missing).toEqual([]);
  });

  it('shows what a client saw as 429s as limited (refused messages) in shedTrend (every bucket with fill) and topShedders', async () => {
    const operator = api.as('OPERATOR');
    await operator('mutation { registerTenant(input: { tenantId: "hooli" }) { __typename } }');
    const set = await operator<{ setTenantOverride: { __typename: string } }>(
      'mutation { setTenantOverride(input: { tenantId: "hooli", dimension: INGEST, ratePerSecond: 5, burst: 5, reason: "e2e" }) { __typename } }',
    );
    expect(set.setTenantOverride.__typename).toBe('Applied');
    const { issueIngestKey } = await operator<{ issueIngestKey: { key: string } }>('mutation { issueIngestKey(input: { tenantId: "hooli" }) { ... on IngestKeyIssued { key } } }');
    await running.service.projections.waitForCaughtUp();
    const from = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 3 * 60_000);
    const post = (readings: number) =>
      fetch(`${running.baseUrl}/v1/ingest/hooli`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-device-key': issueIngestKey.key },
        body: JSON.stringify({ readings: Array.from({ length: readings }, (_, i) => ({ measurements: { [`m${i}`]: i } })) }),
      });
    expect((await post(1)).status).toBe(202);
    await running.service.governor.loadsSettled();
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await post(2)).status);
    const refused = statuses.filter((status) => status === 429).length;
    expect(refused).toBeGreaterThan(0);
    await running.service.governor.flush();
    await running.service.projections.waitForCaughtUp();
    const to = new Date(Math.ceil((Date.now() + 1) / 60_000) * 60_000);

    type Point = { start: string; limited: number; limitedUnits: number; limitedMessages: number; rejected: number; rejectedMessages: number; shed: number };
    const { shedTrend, topShedders } = await api.as('AUDITOR')<{ shedTrend: Point[]; topShedders: Array<{ tenantId: string; limited: number; limitedUnits: number }> }>(
      `query($from: DateTime!, $to: DateTime!) {
        shedTrend(tenantId: "hooli", dimension: INGEST, from: $from, to: $to, bucket: MINUTE, fill: true) { start limited limitedUnits limitedMessages rejected rejectedMessages shed }
        topShedders(dimension: INGEST, from: $from, to: $to, first: 5) { tenantId limited limitedUnits } }`,
      { from: from.toISOString(), to: to.toISOString() },
    );
    expect(shedTrend.map((point) => point.start)).toEqual(
      Array.from({ length: (to.getTime() - from.getTime()) / 60_000 }, (_, i) => new Date(from.getTime() + i * 60_000).toISOString()),
    );
    const sum = (field: keyof Omit<Point, 'start'>) => shedTrend.reduce((total, point) => total + point[field], 0);
    // The 429s are counted one for one in limited, whatever they were refused on.
    expect(sum('limited')).toBe(refused);
    expect(sum('limitedMessages')).toBe(refused);
    // Refusals on the per-message charge carry no units, so limited units may be fewer than the readings sent.
    expect(sum('limitedUnits')).toBe(sum('rejected') + sum('shed'));
    expect(topShedders.find((shedder) => shedder.tenantId === 'hooli')).toEqual({ tenantId: 'hooli', limited: refused, limitedUnits: sum('limitedUnits') });
  });
});

