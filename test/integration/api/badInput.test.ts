// Input that storage could not keep, anywhere in the API: a typed InvalidInput naming the field on every
// mutation, a BAD_USER_INPUT / BAD_CURSOR error naming it on queries, never INTERNAL_SERVER_ERROR, and
// nothing appended.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../../src/db/storableValues.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { openApiHarness, type ApiHarness } from './apiHarness.ts';

const OPERATOR = { id: 'seed', role: 'OPERATOR' } as const;
const LONE = '\ud800';
const NUL = '\u0000';

function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { v: value };
  return value;
}

describeOnEachStorage('bad input over GraphQL on $name', (target) => {
  let api: ApiHarness;
  let operator: string;

  beforeAll(async () => {
    api = await openApiHarness(target);
    await api.controlPlane.defineTier(OPERATOR, { tierId: 'small', name: 'Small' });
    await api.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'small' });
    await api.projections.waitForCaughtUp();
    operator = await api.token('OPERATOR');
  }, 180_000);
  afterAll(() => api?.dispose());

  const eventCount = async () => (await api.db.query<{ n: bigint }>('SELECT count(*) AS n FROM gl_events')).rows[0]!.n;
  const streamCount = async () => (await api.db.query<{ n: bigint }>('SELECT count(DISTINCT stream) AS n FROM gl_events')).rows[0]!.n;

  /** Runs one mutation with `input` and answers its payload (typename, field, message). */
  async function mutate(name: string, inputType: string, input: Record<string, unknown>) {
    const response = await api.gql<Record<string, { __typename: string; field?: string | null; message?: string }>>(
      operator,
      `mutation($input: ${inputType}!) { ${name}(input: $input) { __typename ... on Error { message } ... on InputError { field } } }`,
      { input },
    );
    expect(response.errors, JSON.stringify(response.errors)).toBeUndefined();
    return response.data![name]!;
  }

  it('answers InvalidInput naming the field for every kind of unstorable text and JSON, appending nothing', async () => {
    const before = await eventCount();
    const command = { tenantId: 'acme', commandId: 'c1', deviceId: 'pump-1', payload: { on: true } };
    const cases: Array<[string, string, Record<string, unknown>, string]> = [
      ['enqueueCommand', 'EnqueueCommandInput', { ...command, commandId: `c${LONE}` }, 'commandId'],
      ['enqueueCommand', 'EnqueueCommandInput', { ...command, commandId: `c${NUL}` }, 'commandId'],
      ['enqueueCommand', 'EnqueueCommandInput', { ...command, deviceId: `d${LONE}` }, 'deviceId'],
      ['enqueueCommand', 'EnqueueCommandInput', { ...command, payload: { a: LONE } }, 'payload'],
      ['enqueueCommand', 'EnqueueCommandInput', { ...command, payload: { [`k${NUL}`]: 1 } }, 'payload'],
      ['enqueueCommand', 'EnqueueCommandInput', { ...command, payload: [`x${NUL}`] }, 'payload'],
      ['enqueueCommand', 'EnqueueCommandInput', { ...command, payload: nested(MAX_JSON_DEPTH + 1) }, 'payload'],
      ['enqueueCommand', 'EnqueueCommandInput', { ...command, tenantId: '../acme' }, 'tenantId'],
      ['enqueueCommand', 'EnqueueCommandInput', { ...command, tenantId: 'acmé😀' }, 'tenantId'],
      ['enqueueCommand', 'EnqueueCommandInput', { ...command, tenantId: `acme${LONE}` }, 'tenantId'],
      ['markCommandFailed', 'MarkCommandFailedInput', { tenantId: 'acme', commandId: 'c1', error: `e${NUL}` }, 'error'],
      ['cancelCommand', 'CancelCommandInput', { tenantId: 'acme', commandId: 'c1', reason: `r${LONE}` }, 'reason'],
      ['markCommandDelivered', 'MarkCommandDeliveredInput', { tenantId: 'acme', commandId: `c${LONE}` }, 'commandId'],
      ['defineTier', 'DefineTierInput', { tierId: 'gold', name: `Gold${LONE}` }, 'name'],
      ['defineTier', 'DefineTierInput', { tierId: 'gold', name: `Gold${NUL}` }, 'name'],
      ['setTenantOverride', 'SetTenantOverrideInput', { tenantId: 'acme', dimension: 'INGEST', ratePerSecond: 5, reason: `why${LONE}` }, 'reason'],
      ['setTenantBranding', 'SetTenantBrandingInput', { tenantId: 'acme', branding: { productName: `Acme${NUL}` } }, 'branding.productName'],
      ['setTenantBranding', 'SetTenantBrandingInput', { tenantId: 'acme', branding: { productName: 'Acme', logoUrl: `https://a.example/${LONE}` } }, 'branding.logoUrl'],
    ];
    for (const [name, inputType, input, field] of cases) {
      const payload = await mutate(name, inputType, input);
      expect(payload, `${name} ${field}`).toMatchObject({ __typename: 'InvalidInput', field });
      expect(payload.message).not.toBe('Unexpected error.');
    }
    // 4,600 levels, sent as text: deeper than JSON.stringify here may recurse.
    const deep = await api.yoga.fetch('http://localhost/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${operator}` },
      body: `{"query":"mutation($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename ... on InputError { field } } }",
        "variables":{"input":{"tenantId":"acme","commandId":"c1","deviceId":"d","payload":${'{"v":'.repeat(4_600)}1${'}'.repeat(4_600)}}}}`,
    });
    expect(await deep.json()).toEqual({ data: { enqueueCommand: { __typename: 'InvalidInput', field: 'payload' } } });
    // A number JSON cannot hold exactly, written in the document itself (a variable arrives as a double).
    const literal = await api.gql<{ enqueueCommand: { __typename: string; field: string } }>(
      operator,
      'mutation { enqueueCommand(input: { tenantId: "acme", commandId: "c1", deviceId: "d", payload: { n: 123456789012345678901234567890 } }) { __typename ... on InputError { field } } }',
    );
    expect(literal.data?.enqueueCommand).toEqual({ __typename: 'InvalidInput', field: 'payload' });
    const asVariable = await mutate('enqueueCommand', 'EnqueueCommandInput', { ...command, payload: { n: Number('123456789012345678901234567890') } });
    expect(asVariable).toMatchObject({ __typename: 'InvalidInput', field: 'payload' });
    await api.projections.waitForCaughtUp();
    expect(await eventCount()).toBe(before);
  });

  it('creates no stream for an unknown or malformed tenant', async () => {
    const streams = await streamCount();
    const service = await api.token('SERVICE');
    for (const tenantId of ['nobody', '../acme', 'acmé😀']) {
      const response = await api.gql<{ enqueueCommand: { __typename: string } }>(
        service,
        'mutation($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename } }',
        { input: { tenantId, commandId: 'c1', deviceId: 'd', payload: {} } },
      );
      expect(response.data?.enqueueCommand.__typename).toBe(tenantId === 'nobody' ? 'CommandRejected' : 'InvalidInput');
    }
    expect(await streamCount()).toBe(streams);
    const rows = await api.db.query("SELECT tenant_id FROM gl_command_backlog_view WHERE tenant_id IN ('nobody', '../acme', 'acmé😀')");
    expect(rows.rows).toEqual([]);
  });

  it('answers queries given a bad cursor or an instant out of range with a typed error naming the argument', async () => {
    const queries: Array<[string, string, string]> = [
      ['{ limitHistory(after: "abc") { edges { cursor } } }', 'BAD_CURSOR', 'after'],
      ['{ limitHistory(after: "OTk5OTk5OTk5OTk5OTk5OTk5OTk5OjE") { edges { cursor } } }', 'BAD_CURSOR', 'after'],
      ['{ tenants(after: "AA") { edges { cursor } } }', 'BAD_CURSOR', 'after'],
      ['{ tenants(after: "_w") { edges { cursor } } }', 'BAD_CURSOR', 'after'],
      ['{ shedTrend(tenantId: "acme", dimension: INGEST, from: "-271821-04-20T00:00:00Z", to: "2026-01-01T00:00:00Z", bucket: HOUR) { start } }', 'BAD_USER_INPUT', 'from'],
      ['{ topShedders(from: "-271821-04-20T00:00:00Z", to: "2026-01-01T00:00:00Z") { tenantId } }', 'BAD_USER_INPUT', 'from'],
      ['{ unresolvedAdmissions(from: "2026-01-01T00:00:00Z", to: "+275760-09-13T00:00:00Z") { count } }', 'BAD_USER_INPUT', 'to'],
      ['{ effectiveLimitsAt(tenantId: "acme", at: "-000001-01-01T00:00:00Z") { source } }', 'BAD_USER_INPUT', 'at'],
      [`{ tenant(id: "a${'\\u0000'}") { id } }`, 'BAD_USER_INPUT', 'id'],
    ];
    for (const [query, code, field] of queries) {
      const response = await api.gql(operator, query);
      expect(response.status, query).toBeLessThan(500);
      expect(response.errors?.[0]?.extensions, query).toMatchObject({ code, field });
    }
  });
});
