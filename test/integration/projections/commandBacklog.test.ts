// The command-backlog read model from the commands streams' events alone: each accepted command counts until
// it settles, however it settles; a refusal counts as refused and leaves the backlog as it was.
// test/integration/command-backlog/commandBacklogReadModel.test.ts proves the same read model equals the
// guard rows the service keeps, through the whole backlog.
import { expect, it } from 'vitest';
import { commandsStream, type CommandEventMap, type CommandEventType } from '../../../src/ledger/catalog/commands.ts';
import { commandBacklogProjection } from '../../../projections/commandBacklog.ts';
import { describeOnEachStorage } from '../../support/databases.ts';
import { useProjectionSpec, type GivenEvent } from '../../support/projectionSpec.ts';

function command<Type extends CommandEventType>(type: Type, data: CommandEventMap[Type]): GivenEvent {
  return { type, data, stream: commandsStream(data.tenantId) };
}

const enqueued = (tenantId: string, commandId: string, undelivered: number) =>
  command('CommandEnqueued', { tenantId, commandId, deviceId: 'd1', payload: { on: true }, undelivered, ceiling: 3, ceilingSource: 'TIER' });
const rejected = (tenantId: string, commandId: string) =>
  command('CommandRejected', {
    tenantId,
    commandId,
    deviceId: 'd1',
    reason: 'CEILING_REACHED',
    retryable: true,
    retryAfterSeconds: 5,
    undelivered: 3,
    ceiling: 3,
  });

describeOnEachStorage('command backlog read model from its events on $name', (target) => {
  const spec = useProjectionSpec(target, commandBacklogProjection);
  const backlog = (tenantId: string) =>
    spec.rows('SELECT undelivered, accepted_total, rejected_total, settled_total FROM gl_command_backlog_view WHERE tenant_id = $1', [tenantId]);

  it('counts a command from its acceptance until it settles, by any of the four ways', async () => {
    await spec.given(
      enqueued('acme', 'c1', 1),
      enqueued('acme', 'c2', 2),
      enqueued('acme', 'c3', 3),
      enqueued('acme', 'c4', 4),
      enqueued('acme', 'c5', 5),
    );
    expect(await backlog('acme')).toEqual([{ undelivered: 5, accepted_total: 5n, rejected_total: 0n, settled_total: 0n }]);
    await spec.given(
      command('CommandDelivered', { tenantId: 'acme', commandId: 'c1', undelivered: 4 }),
      command('CommandFailed', { tenantId: 'acme', commandId: 'c2', undelivered: 3, error: 'device offline' }),
      command('CommandCancelled', { tenantId: 'acme', commandId: 'c3', undelivered: 2 }),
      command('CommandExpired', { tenantId: 'acme', commandId: 'c4', undelivered: 1, enqueuedAt: '2026-03-01T12:00:00.000Z', ttlMs: 60_000 }),
    );
    expect(await backlog('acme')).toEqual([{ undelivered: 1, accepted_total: 5n, rejected_total: 0n, settled_total: 4n }]);
  });

  it('counts a refusal without changing the backlog, and keeps each tenant apart', async () => {
    await spec.given(enqueued('globex', 'g1', 1), rejected('globex', 'g2'), rejected('initech', 'i1'));
    expect(await backlog('globex')).toEqual([{ undelivered: 1, accepted_total: 1n, rejected_total: 1n, settled_total: 0n }]);
    expect(await backlog('initech')).toEqual([{ undelivered: 0, accepted_total: 0n, rejected_total: 1n, settled_total: 0n }]);
  });

  it('ignores events of other types on the same streams', async () => {
    await spec.given({ type: 'TenantRegistered', data: { tenantId: 'hooli', tierId: null }, stream: commandsStream('hooli') });
    expect(await backlog('hooli')).toEqual([]);
  });
});
