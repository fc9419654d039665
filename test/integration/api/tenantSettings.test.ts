// The tenant settings beside the limits (model, branding, API_REQUESTS over-limit policy) and settling a
// command as failed or cancelled: each mutation applies, a typed error appends nothing, and a tenant viewer
// is refused with Forbidden.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnEachStorage } from '../../support/databases.ts';
import { openApiHarness, type ApiHarness } from './apiHarness.ts';
import { readWholeLedger } from '../../support/readLedger.ts';

type Payload = { __typename: string; position?: string; field?: string | null; message?: string; commandId?: string; undelivered?: number };

const OPERATOR = { id: 'seed', role: 'OPERATOR' } as const;
const COMMAND_SETTLEMENTS = ['markCommandFailed', 'cancelCommand'];

/** Applied answers control-plane mutations, CommandSettled the command settlements. */
function payloadOf(name: string): string {
  const success = COMMAND_SETTLEMENTS.includes(name) ? '... on CommandSettled { commandId undelivered }' : '... on Applied { position }';
  return `{ __typename ${success} ... on Error { message } ... on InputError { field } }`;
}

describeOnEachStorage('GraphQL tenant settings and command settlement on $name', (target) => {
  let api: ApiHarness;
  let operator: string;

  async function mutate(name: string, input: Record<string, unknown>, token = operator): Promise<Payload> {
    const inputType = `${name[0]!.toUpperCase()}${name.slice(1)}Input`;
    const response = await api.gql<Record<string, Payload>>(token, `mutation($input: ${inputType}!) { ${name}(input: $input) ${payloadOf(name)} }`, { input });
    expect(response.errors, `${name}: ${JSON.stringify(response.errors)}`).toBeUndefined();
    return response.data![name]!;
  }

  const ledgerLength = async () => (await readWholeLedger(api.store)).length;

  // Opening a database takes long on a busy machine (hence the hook's timeout); the tests themselves are quick.
  beforeAll(async () => {
    api = await openApiHarness(target);
    operator = await api.token('OPERATOR');
    await api.controlPlane.defineTier(OPERATOR, { tierId: 'silver', name: 'Silver' });
    await api.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'silver' });
    await api.controlPlane.registerTenant(OPERATOR, { tenantId: 'globex' });
    await api.projections.waitForCaughtUp();
  }, 180_000);
  afterAll(() => api?.dispose());

  it('reads the shipped settings of a tenant that chose nothing', async () => {
    const tenant = await api.gql(operator, '{ tenant(id: "globex") { overLimitPolicy model { model source } branding { productName logoUrl source } } }');
    expect(tenant.data).toEqual({
      tenant: { overLimitPolicy: 'EXACT_REJECT', model: { model: null, source: 'NONE' }, branding: { productName: 'DeviceChain', logoUrl: null, source: 'SHIPPED_DEFAULT' } },
    });
  });

  it('applies every setting mutation and reads the result through the cascades', async () => {
    const applied = [
      await mutate('setTierDefaultModel', { tierId: 'silver', model: 'llama-3.1-8b', reason: 'package' }),
      await mutate('assignTenantModel', { tenantId: 'globex', model: 'gpt-4o-mini' }),
      await mutate('setBrandingDefault', { branding: { productName: 'Fleet Cloud' } }),
      await mutate('setTenantBranding', { tenantId: 'globex', branding: { productName: 'Globex IoT', logoUrl: 'https://globex.example/logo.svg', primaryColor: '#112233' } }),
      await mutate('setTenantOverLimitPolicy', { tenantId: 'acme', policy: 'STABLE_DOWNSAMPLE', reason: 'dashboards poll' }),
    ];
    for (const payload of applied) expect(payload).toEqual({ __typename: 'Applied', position: expect.stringMatching(/^\d+:\d+$/) });
    await api.projections.waitForCaughtUp();

    const tenants = await api.gql(
      operator,
      '{ tenants { edges { node { id overLimitPolicy model { model source } branding { productName logoUrl primaryColor source } } } } }',
    );
    expect(tenants.errors).toBeUndefined();
    expect(tenants.data).toEqual({
      tenants: {
        edges: [
          {
            node: {
              id: 'acme',
              overLimitPolicy: 'STABLE_DOWNSAMPLE',
              model: { model: 'llama-3.1-8b', source: 'TIER_DEFAULT' },
              branding: { productName: 'Fleet Cloud', logoUrl: null, primaryColor: null, source: 'BRANDING_DEFAULT' },
            },
          },
          {
            node: {
              id: 'globex',
              overLimitPolicy: 'EXACT_REJECT',
              model: { model: 'gpt-4o-mini', source: 'TENANT_ASSIGNMENT' },
              branding: { productName: 'Globex IoT', logoUrl: 'https://globex.example/logo.svg', primaryColor: '#112233', source: 'TENANT' },
            },
          },
        ],
      },
    });
  });

  it('reads model and branding of a page of tenants in one query each', async () => {
    api.statements.count = 0;
    const page = await api.gql(operator, '{ tenants { edges { node { id model { source } branding { source } } } } }');
    expect(page.errors).toBeUndefined();
    // The tenant page, then one batched query for models and one for brandings.
    expect(api.statements.count).toBe(3);
  });

  it('lets a tenant admin set its own branding and policy, and clears back to the defaults', async () => {
    const admin = await api.token('TENANT_ADMIN', 'globex');
    expect(await mutate('setTenantBranding', { tenantId: 'globex', branding: null, reason: 'rebrand later' }, admin)).toMatchObject({ __typename: 'Applied' });
    expect(await mutate('setTenantOverLimitPolicy', { tenantId: 'globex', dimension: 'API_REQUESTS', policy: 'STABLE_DOWNSAMPLE' }, admin)).toMatchObject({
      __typename: 'Applied',
    });
    expect(await mutate('assignTenantModel', { tenantId: 'globex', model: null })).toMatchObject({ __typename: 'Applied' });
    await api.projections.waitForCaughtUp();
    const tenant = await api.gql(admin, '{ tenant(id: "globex") { overLimitPolicy model { model source } branding { productName source } } }');
    expect(tenant.data).toEqual({
      tenant: { overLimitPolicy: 'STABLE_DOWNSAMPLE', model: { model: null, source: 'NONE' }, branding: { productName: 'Fleet Cloud', source: 'BRANDING_DEFAULT' } },
    });
  });

  it('answers bad input with a typed error and appends nothing', async () => {
    const before = await ledgerLength();
    expect(await mutate('setTierDefaultModel', { tierId: 'platinum', model: 'x' })).toMatchObject({ __typename: 'UnknownTier', field: 'tierId' });
    expect(await mutate('setTierDefaultModel', { tierId: 'silver', model: ' no spaces ' })).toMatchObject({ __typename: 'InvalidInput', field: 'model' });
    expect(await mutate('assignTenantModel', { tenantId: 'nobody', model: 'gpt-4o-mini' })).toMatchObject({ __typename: 'UnknownTenant', field: 'tenantId' });
    expect(await mutate('setTenantBranding', { tenantId: 'acme', branding: { productName: 'Acme', logoUrl: 'http://insecure.example/logo.png' } })).toMatchObject({
      __typename: 'InvalidInput',
      field: 'branding.logoUrl',
    });
    expect(await mutate('setBrandingDefault', { branding: { productName: '   ' } })).toMatchObject({ __typename: 'InvalidInput', field: 'branding.productName' });
    expect(await mutate('setTenantOverLimitPolicy', { tenantId: 'acme', dimension: 'INGEST', policy: 'EXACT_REJECT' })).toMatchObject({
      __typename: 'InvalidInput',
      field: 'dimension',
    });
    expect(await mutate('setTenantOverLimitPolicy', { tenantId: 'nobody', policy: 'EXACT_REJECT' })).toMatchObject({ __typename: 'UnknownTenant' });
    expect(await ledgerLength()).toBe(before);
  });

  it('refuses a tenant viewer every setting with Forbidden, and a tenant admin the operator-only ones', async () => {
    const viewer = await api.token('TENANT_VIEWER', 'acme');
    const admin = await api.token('TENANT_ADMIN', 'acme');
    const before = await ledgerLength();
    const refused = [
      await mutate('setTierDefaultModel', { tierId: 'silver', model: 'x' }, viewer),
      await mutate('assignTenantModel', { tenantId: 'acme', model: 'x' }, viewer),
      await mutate('setTenantBranding', { tenantId: 'acme', branding: { productName: 'Acme' } }, viewer),
      await mutate('setBrandingDefault', { branding: { productName: 'Acme' } }, viewer),
      await mutate('setTenantOverLimitPolicy', { tenantId: 'acme', policy: 'EXACT_REJECT' }, viewer),
      await mutate('assignTenantModel', { tenantId: 'acme', model: 'x' }, admin),
      await mutate('setTenantBranding', { tenantId: 'globex', branding: { productName: 'Not mine' } }, admin),
    ];
    for (const payload of refused) expect(payload).toMatchObject({ __typename: 'Forbidden', message: expect.any(String) });
    expect(await ledgerLength()).toBe(before);
  });

  it('settles commands as failed or cancelled, refusing a viewer and a command already settled', async () => {
    const service = await api.token('SERVICE');
    const viewer = await api.token('TENANT_VIEWER', 'acme');
    for (const commandId of ['c1', 'c2', 'c3']) {
      const enqueued = await api.gql<{ enqueueCommand: { __typename: string } }>(
        service,
        'mutation($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename } }',
        { input: { tenantId: 'acme', commandId, deviceId: 'valve-7', payload: { open: true } } },
      );
      expect(enqueued.data?.enqueueCommand.__typename).toBe('CommandAccepted');
    }

    expect(await mutate('markCommandFailed', { tenantId: 'acme', commandId: 'c1', error: 'device offline' }, service)).toEqual({
      __typename: 'CommandSettled',
      commandId: 'c1',
      undelivered: 2,
    });
    expect(await mutate('markCommandFailed', { tenantId: 'acme', commandId: 'c2' }, service)).toMatchObject({ __typename: 'CommandSettled', undelivered: 1 });
    expect(await mutate('cancelCommand', { tenantId: 'acme', commandId: 'c3', reason: 'superseded' }, operator)).toEqual({
      __typename: 'CommandSettled',
      commandId: 'c3',
      undelivered: 0,
    });

    const before = await ledgerLength();
    expect(await mutate('cancelCommand', { tenantId: 'acme', commandId: 'c1', reason: 'too late' }, service)).toMatchObject({ __typename: 'CommandAlreadySettled' });
    expect(await mutate('markCommandFailed', { tenantId: 'acme', commandId: 'never' }, service)).toMatchObject({ __typename: 'UnknownCommand' });
    expect(await mutate('cancelCommand', { tenantId: 'acme', commandId: 'c2', reason: '' }, service)).toMatchObject({ __typename: 'InvalidInput', field: 'reason' });
    expect(await mutate('markCommandFailed', { tenantId: 'acme', commandId: 'c1' }, viewer)).toMatchObject({ __typename: 'Forbidden' });
    expect(await mutate('cancelCommand', { tenantId: 'acme', commandId: 'c1', reason: 'mine' }, viewer)).toMatchObject({ __typename: 'Forbidden' });
    expect(await ledgerLength()).toBe(before);

    // The command list says why each left: a failure's error, a cancel's reason.
    await api.projections.waitForCaughtUp();
    const listed = await api.gql<{ commands: { edges: Array<{ node: Record<string, unknown> }> } }>(
      operator,
      '{ commands(tenantId: "acme") { edges { node { commandId status error reason } } } }',
    );
    expect(listed.data?.commands.edges.map(({ node }) => node)).toEqual(
      expect.arrayContaining([
        { commandId: 'c1', status: 'FAILED', error: 'device offline', reason: null },
        { commandId: 'c3', status: 'CANCELLED', error: null, reason: 'superseded' },
      ]),
    );
  });
});
