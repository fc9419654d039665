// Command delivery against the backlog ceiling, and the trend queries over recorded admissions.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMISSIONS_STREAM } from '../../../src/ledger/catalog/admissions.ts';
import type { AdmissionSummary } from '../../../src/governance/index.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { openApiHarness, type ApiHarness } from './apiHarness.ts';
import { admissionSummary } from '../../support/admissionSummaries.ts';

const OPERATOR = { id: 'seed', role: 'OPERATOR' } as const;
const HOUR_START = Date.UTC(2026, 0, 5, 10, 0, 0) / 1000;

function summary(tenantId: string, minute: number, counts: Partial<AdmissionSummary>): AdmissionSummary {
  return admissionSummary({ tenantId, fromSecond: HOUR_START + minute * 60, ...counts });
}

describeOnEachStorage('GraphQL commands and trends on $name', (target) => {
  let api: ApiHarness;

  // Opening a database takes long on a busy machine (hence the hook's timeout); the tests themselves are quick.
  beforeAll(async () => {
    api = await openApiHarness(target);
    await api.controlPlane.defineTier(OPERATOR, { tierId: 'small', name: 'Small' });
    await api.controlPlane.setTierLimit(OPERATOR, { tierId: 'small', dimension: 'UNDELIVERED_COMMANDS', ceiling: 2 });
    await api.controlPlane.registerTenant(OPERATOR, { tenantId: 'acme', tierId: 'small' });
    await api.controlPlane.registerTenant(OPERATOR, { tenantId: 'globex' });
    await api.projections.waitForCaughtUp();
  }, 180_000);
  afterAll(() => api?.dispose());

  const ENQUEUE = `mutation($input: EnqueueCommandInput!) { enqueueCommand(input: $input) { __typename
    ... on CommandAccepted { commandId undelivered ceiling }
    ... on CommandRejected { commandId reason retryable retryAfterSeconds undelivered ceiling message }
    ... on InputError { field message } } }`;
  const DELIVERED = `mutation($input: MarkCommandDeliveredInput!) { markCommandDelivered(input: $input) { __typename
    ... on CommandSettled { commandId undelivered } ... on Error { message } } }`;

  it('accepts commands up to the ceiling, then refuses retryably; delivery frees a slot', async () => {
    const service = await api.token('SERVICE');
    const enqueue = async (input: Record<string, unknown>) =>
      (await api.gql<{ enqueueCommand: Record<string, unknown> }>(service, ENQUEUE, { input })).data!.enqueueCommand;
    const command = (commandId: string) => ({ tenantId: 'acme', commandId, deviceId: 'valve-7', payload: { open: true, percent: 40 } });

    expect(await enqueue(command('c1'))).toEqual({ __typename: 'CommandAccepted', commandId: 'c1', undelivered: 1, ceiling: 2 });
    expect(await enqueue(command('c2'))).toEqual({ __typename: 'CommandAccepted', commandId: 'c2', undelivered: 2, ceiling: 2 });
    expect(await enqueue(command('c3'))).toEqual({
      __typename: 'CommandRejected',
      commandId: 'c3',
      reason: 'CEILING_REACHED',
      retryable: true,
      retryAfterSeconds: expect.any(Number),
      undelivered: 2,
      ceiling: 2,
      message: expect.stringMatching(/^the tenant's backlog is full: 2 undelivered command\(s\) at its UNDELIVERED_COMMANDS ceiling of 2; nothing was queued: enqueue the same commandId again in \d+ s/),
    });
    expect(await enqueue({ ...command('c9'), tenantId: 'nobody' })).toMatchObject({
      __typename: 'CommandRejected',
      reason: 'UNKNOWN_TENANT',
      retryable: false,
      ceiling: null,
      message: 'no such tenant is registered; nothing was queued (register it first)',
    });
    expect(await enqueue({ ...command(''), commandId: '' })).toMatchObject({ __typename: 'InvalidInput', field: 'commandId' });

    const deliver = async (commandId: string) =>
      (await api.gql<{ markCommandDelivered: Record<string, unknown> }>(service, DELIVERED, { input: { tenantId: 'acme', commandId } })).data!.markCommandDelivered;
    expect(await deliver('c1')).toEqual({ __typename: 'CommandSettled', commandId: 'c1', undelivered: 1 });
    expect(await deliver('c1')).toMatchObject({ __typename: 'CommandAlreadySettled' });
    expect(await deliver('never')).toMatchObject({ __typename: 'UnknownCommand' });
    // A commandId is an idempotency key: sent again after it left, it answers how it left; with other content, a conflict.
    const again = await api.gql<{ enqueueCommand: Record<string, unknown> }>(service, `mutation($input: EnqueueCommandInput!) { enqueueCommand(input: $input) {
      __typename ... on CommandAlreadySettled { settledAs field } } }`, { input: command('c1') });
    expect(again.data!.enqueueCommand).toEqual({ __typename: 'CommandAlreadySettled', settledAs: 'delivered', field: 'commandId' });
    expect(await enqueue({ ...command('c2'), deviceId: 'valve-8' })).toMatchObject({ __typename: 'CommandIdConflict', field: 'commandId', message: expect.stringContaining('c2') });

    const backlog = await api.gql(service, '{ commandBacklog(tenantId: "acme") { tenantId undelivered ceiling source } }');
    expect(backlog.data).toEqual({ commandBacklog: { tenantId: 'acme', undelivered: 1, ceiling: 2, source: 'TIER' } });
    const unknown = await api.gql(service, '{ commandBacklog(tenantId: "nobody") { undelivered } }');
    expect(unknown.errors?.[0]?.extensions?.code).toBe('UNKNOWN_TENANT');

    // The tenant's own admin may deliver; its viewer may only look.
    const admin = await api.token('TENANT_ADMIN', 'acme');
    expect((await api.gql<{ enqueueCommand: { __typename: string } }>(admin, ENQUEUE, { input: command('c4') })).data!.enqueueCommand.__typename).toBe('CommandAccepted');
    const viewer = await api.token('TENANT_VIEWER', 'acme');
    expect((await api.gql(viewer, '{ commandBacklog(tenantId: "acme") { undelivered } }')).data).toEqual({ commandBacklog: { undelivered: 2 } });
  });

  it('answers shed trends, top shedders and unresolved admissions from the recorded summaries', async () => {
    await api.store.append(ADMISSIONS_STREAM, [
      {
        type: 'AdmissionsRecorded',
        data: {
          entries: [
            summary('acme', 0, { admittedUnits: 100, shedUnits: 30, hitSeconds: 1 }),
            summary('acme', 1, { admittedUnits: 50, shedUnits: 10, rejectedUnits: 5, hitSeconds: 1 }),
            summary('globex', 0, { admittedUnits: 10, shedUnits: 200, hitSeconds: 1 }),
          ],
        },
      },
      {
        type: 'UnresolvedAdmissionsRecorded',
        data: { entries: [{ tenantId: 'ghost', dimension: 'INGEST', cause: 'unknown-tenant', fromSecond: HOUR_START, seconds: 1, units: 12, messages: 3 }] },
      },
    ]);
    await api.projections.waitForCaughtUp();
    const auditor = await api.token('AUDITOR');
    const range = { from: new Date(HOUR_START * 1000).toISOString(), to: new Date((HOUR_START + 3600) * 1000).toISOString() };

    const trend = await api.gql(
      auditor,
      'query($from: DateTime!, $to: DateTime!) { shedTrend(tenantId: "acme", dimension: INGEST, from: $from, to: $to, bucket: MINUTE) { start admitted shed rejected hits } }',
      range,
    );
    expect(trend.data).toEqual({
      shedTrend: [
        { start: '2026-01-05T10:00:00.000Z', admitted: 100, shed: 30, rejected: 0, hits: 1 },
        { start: '2026-01-05T10:01:00.000Z', admitted: 50, shed: 10, rejected: 5, hits: 1 },
      ],
    });

    const top = await api.gql(auditor, 'query($from: DateTime!, $to: DateTime!) { topShedders(from: $from, to: $to, first: 5) { tenantId shed rejected tenant { id } } }', range);
    expect(top.data).toEqual({
      topShedders: [
        { tenantId: 'globex', shed: 200, rejected: 0, tenant: { id: 'globex' } },
        { tenantId: 'acme', shed: 40, rejected: 5, tenant: { id: 'acme' } },
      ],
    });

    const unresolved = await api.gql(auditor, 'query($from: DateTime!, $to: DateTime!) { unresolvedAdmissions(from: $from, to: $to) { dimension cause count } }', range);
    expect(unresolved.data).toEqual({ unresolvedAdmissions: [{ dimension: 'INGEST', cause: 'unknown-tenant', count: 12 }] });

    const backwards = await api.gql(auditor, '{ shedTrend(tenantId: "acme", dimension: INGEST, from: "2026-01-05T11:00:00Z", to: "2026-01-05T10:00:00Z", bucket: HOUR) { shed } }');
    expect(backwards.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'to' });
  });
});
