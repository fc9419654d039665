import { describe, expect, it } from 'vitest';
import { expiryAppends, type ExpiredCommand } from '../../../src/command-backlog/postgres/expireQueuedCommands.ts';
import { eventBytes, MAX_APPEND_BYTES } from '../../../src/ledger/appendSize.ts';
import { commandsStream } from '../../../src/ledger/catalog/commands.ts';

const at = new Date('2024-06-01T01:00:00Z');
const expired = (tenantId: string, count: number, idLength = 8): ExpiredCommand[] =>
  Array.from({ length: count }, (_, n) => ({
    tenantId,
    commandId: `${n}`.padStart(idLength, 'c'),
    enqueuedAt: new Date(at.getTime() - 3_600_000 - (count - n) * 1_000),
    undelivered: count - n - 1,
  }));

describe('command expiry appends (database path)', () => {
  it('keeps a pass in one append when it is small, one part per tenant stream', () => {
    const appends = expiryAppends([...expired('a', 3), ...expired('b', 2)], at, 3_600_000, MAX_APPEND_BYTES);
    expect(appends).toHaveLength(1);
    expect(appends[0]!.map((each) => [each.stream, each.events.length])).toEqual([
      [commandsStream('a'), 3],
      [commandsStream('b'), 2],
    ]);
    expect(appends[0]![0]!.events[0]).toMatchObject({ type: 'CommandExpired', data: { tenantId: 'a', undelivered: 2, ttlMs: 3_600_000 }, metadata: { occurredAt: at.toISOString() } });
  });

  it('cuts a pass by serialized size, not by count, keeping every tenant’s events in order', () => {
    const maxBytes = 20_000;
    const commands = [...expired('a', 60, 256), ...expired('b', 40, 256)];
    const appends = expiryAppends(commands, at, 3_600_000, maxBytes);
    expect(appends.length).toBeGreaterThanOrEqual(3);
    for (const append of appends) {
      expect(append.flatMap((each) => each.events).reduce((sum, event) => sum + eventBytes(event), 0)).toBeLessThanOrEqual(maxBytes);
      expect(new Set(append.map((each) => each.stream)).size).toBe(append.length);
    }
    const inOrder = (tenantId: string) =>
      appends.flat().filter((each) => each.stream === commandsStream(tenantId)).flatMap((each) => each.events.map((event) => (event.data as { commandId: string }).commandId));
    expect(inOrder('a')).toEqual(commands.filter((each) => each.tenantId === 'a').map((each) => each.commandId));
    expect(inOrder('b')).toEqual(commands.filter((each) => each.tenantId === 'b').map((each) => each.commandId));
  });

  it('appends nothing for an empty pass', () => {
    expect(expiryAppends([], at, 1_000, MAX_APPEND_BYTES)).toEqual([]);
  });
});
