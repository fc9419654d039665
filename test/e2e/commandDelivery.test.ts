// What command-delivery sees of the running service over HTTP: the list of a tenant's commands with their
// status and times, and refusals at the ceiling in /metrics and in commandRejectionTrend.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceIn, type RunningService } from '../support/serviceModes.ts';
import { serviceClient, type ServiceClient } from '../support/serviceClient.ts';
import { waitFor } from '../support/waitFor.ts';

const EMBEDDED = { name: 'embedded PGlite', env: {}, prepare: async () => {}, dispose: async () => {} };

interface CommandNode {
  commandId: string;
  deviceId: string;
  payload: unknown;
  status: string;
  enqueuedAt: string;
  settledAt: string | null;
}
interface Connection {
  commands: { edges: Array<{ cursor: string; node: CommandNode }>; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
}
const LIST = `query($status: CommandStatus, $first: Int, $after: String) {
  commands(tenantId: "acme", status: $status, first: $first, after: $after) {
    edges { cursor node { commandId deviceId payload status enqueuedAt settledAt } } pageInfo { hasNextPage endCursor } } }`;

describe('command-delivery over HTTP', () => {
  let running: RunningService;
  let api: ServiceClient;
  const startedAt = new Date();

  beforeAll(async () => {
    running = await startServiceIn(EMBEDDED);
    api = await serviceClient(running);
    const operator = api.as('OPERATOR');
    await operator('mutation { registerTenant(input: { tenantId: "acme" }) { __typename } }');
    const set = await operator<{ setTenantOverride: { __typename: string } }>(
      'mutation { setTenantOverride(input: { tenantId: "acme", dimension: UNDELIVERED_COMMANDS, ceiling: 3, reason: "e2e" }) { __typename } }',
    );
    expect(set.setTenantOverride.__typename).toBe('Applied');
    await running.service.projections.waitForCaughtUp();
    const delivery = api.as('SERVICE');
    const enqueue = 'mutation($id: ID!, $device: ID!) { enqueueCommand(input: { tenantId: "acme", commandId: $id, deviceId: $device, payload: { on: true } }) { __typename } }';
    for (const [id, device] of [['c1', 'pump-1'], ['c2', 'pump-2'], ['c3', 'pump-3'], ['c4', 'pump-4'], ['c5', 'pump-5']]) {
      await delivery(enqueue, { id, device });
    }
    await delivery('mutation { markCommandDelivered(input: { tenantId: "acme", commandId: "c1" }) { __typename } }');
    await delivery('mutation { cancelCommand(input: { tenantId: "acme", commandId: "c2", reason: "not needed" }) { __typename } }');
    await running.service.projections.waitForCaughtUp();
  }, 180_000);

  afterAll(async () => {
    await running?.stop();
  });

  it('lists the commands newest first with device, payload, status and times, by status and page by page', async () => {
    const delivery = api.as('SERVICE');
    const all = await delivery<Connection>(LIST, { first: 10 });
    expect(all.commands.edges.map((edge) => [edge.node.commandId, edge.node.status])).toEqual([
      ['c3', 'QUEUED'],
      ['c2', 'CANCELLED'],
      ['c1', 'DELIVERED'],
    ]);
    const delivered = all.commands.edges[2]!.node;
    expect(delivered).toMatchObject({ deviceId: 'pump-1', payload: { on: true } });
    expect(Date.parse(delivered.settledAt!)).toBeGreaterThanOrEqual(Date.parse(delivered.enqueuedAt));
    expect(all.commands.edges[0]!.node.settledAt).toBeNull();

    const queued = await delivery<Connection>(LIST, { status: 'QUEUED' });
    expect(queued.commands.edges.map((edge) => edge.node.commandId)).toEqual(['c3']);

    const firstPage = await delivery<Connection>(LIST, { first: 2 });
    expect(firstPage.commands.pageInfo.hasNextPage).toBe(true);
    const secondPage = await delivery<Connection>(LIST, { first: 2, after: firstPage.commands.pageInfo.endCursor });
    expect(secondPage.commands.edges.map((edge) => edge.node.commandId)).toEqual(['c1']);
    expect(secondPage.commands.pageInfo.hasNextPage).toBe(false);

    const other = await api.gql(await api.token('TENANT_VIEWER', 'globex'), LIST, {});
    expect(other.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('counts refusals in /metrics by tenant and reason, and in commandRejectionTrend with every bucket', async () => {
    const metrics = await (await fetch(`${running.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^devicechain_\w+_governance_command_rejections_total\{tenant="acme",reason="CEILING_REACHED"\} 2$/m);

    const from = new Date(Math.floor(startedAt.getTime() / 60_000) * 60_000 - 5 * 60_000);
    const to = new Date(Date.now() + 60_000);
    type Trend = { commandRejectionTrend: Array<{ start: string; rejected: number; ceilingReached: number; unknownTenant: number }> };
    let trend: Trend | undefined;
    await waitFor(
      async () => {
        trend = await api.as('AUDITOR')<Trend>(
          'query($from: DateTime!, $to: DateTime!) { commandRejectionTrend(tenantId: "acme", from: $from, to: $to, bucket: MINUTE) { start rejected ceilingReached unknownTenant } }',
          { from: from.toISOString(), to: to.toISOString() },
        );
        return trend.commandRejectionTrend.reduce((sum, point) => sum + point.rejected, 0) === 2;
      },
      { timeoutMs: 20_000, intervalMs: 100, description: 'two refusals in commandRejectionTrend' },
    );
    const points = trend!.commandRejectionTrend;
    expect(points.length).toBe(Math.ceil((to.getTime() - from.getTime()) / 60_000));
    expect(points[0]).toEqual({ start: from.toISOString(), rejected: 0, ceilingReached: 0, unknownTenant: 0 });
    expect(points.reduce((sum, point) => sum + point.ceilingReached, 0)).toBe(2);
  });
});
