import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../../src/ledger/eventStore.ts';
import { emptyCommandsState, foldCommandEvent } from '../../../src/command-backlog/stream/foldCommandStream.ts';

let revision = 0n;
const event = (type: string, data: Record<string, unknown>, occurredAt: string): RecordedEvent => ({
  id: `e${revision}`,
  stream: 'commands-acme',
  revision: revision++,
  position: { commit: revision, prepare: revision },
  type,
  data: { tenantId: 'acme', ...data },
  metadata: { occurredAt },
  recordedAt: new Date(occurredAt),
});

describe('foldCommandEvent', () => {
  it('counts accepted commands until they settle, once each, and keeps the delivery pace', () => {
    revision = 0n;
    const events = [
      event('CommandEnqueued', { commandId: 'a', undelivered: 1, ceiling: 2 }, '2026-01-01T00:00:00Z'),
      event('CommandEnqueued', { commandId: 'b', undelivered: 2, ceiling: 2 }, '2026-01-01T00:00:01Z'),
      event('CommandRejected', { commandId: 'c', undelivered: 2, ceiling: 2 }, '2026-01-01T00:00:02Z'),
      event('CommandDelivered', { commandId: 'a', undelivered: 1 }, '2026-01-01T00:00:10Z'),
      // A second settlement of the same command (never appended by our code) must not count twice.
      event('CommandCancelled', { commandId: 'a', undelivered: 0 }, '2026-01-01T00:00:11Z'),
      event('CommandFailed', { commandId: 'b', undelivered: 0, error: null }, '2026-01-01T00:00:14Z'),
    ];
    const state = events.reduce(foldCommandEvent, emptyCommandsState());
    expect(state.revision).toBe(5n);
    expect(state.undelivered).toBe(0);
    expect([...state.commands.keys()]).toEqual(['a', 'b']);
    expect(state.commands.get('a')).toMatchObject({ status: 'delivered', undeliveredAtEnqueue: 1, ceilingAtEnqueue: 2 });
    expect(state.commands.get('b')).toMatchObject({ status: 'failed', enqueuedAt: new Date('2026-01-01T00:00:01Z') });
    expect(state.lastDeliveredAt).toEqual(new Date('2026-01-01T00:00:14Z'));
    expect(state.deliveryIntervalMsEwma).toBe(4_000);
  });
});
