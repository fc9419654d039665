// The EventStoreDB adapter's translations, checked with the client's own types and error classes.
import { describe, expect, it } from 'vitest';
import { ANY, NO_STREAM, STREAM_EXISTS, WrongExpectedVersionError, type AllStreamRecordedEvent } from '@eventstore/db-client';
import { WrongExpectedRevision } from '../../../src/ledger/eventStore.ts';
import { toEsdbExpectedRevision, toWrongExpectedRevision } from '../../../src/ledger/eventstoredb/append.ts';
import { isSystemEvent, toRecordedEvent } from '../../../src/ledger/eventstoredb/read.ts';

const recorded = (overrides: Partial<AllStreamRecordedEvent>): AllStreamRecordedEvent =>
  ({
    streamId: 'tenant-1',
    id: '6f1c2a9e-3a53-4d0c-9a39-0f3f4a8b2c11',
    isJson: true,
    revision: 4n,
    type: 'LimitChanged',
    created: new Date('2026-11-29T12:00:00Z'),
    data: { limit: 10 },
    metadata: { actor: 'ops@x' },
    position: { commit: 1_234n, prepare: 1_200n },
    ...overrides,
  }) as AllStreamRecordedEvent;

describe('EventStoreDB mapping', () => {
  it('maps every expected revision', () => {
    expect(toEsdbExpectedRevision('any')).toBe(ANY);
    expect(toEsdbExpectedRevision('no_stream')).toBe(NO_STREAM);
    expect(toEsdbExpectedRevision('stream_exists')).toBe(STREAM_EXISTS);
    expect(toEsdbExpectedRevision(7n)).toBe(7n);
  });

  it('turns WrongExpectedVersionError into WrongExpectedRevision with the caller’s expectation', () => {
    const behind = new WrongExpectedVersionError(undefined, { streamName: 's', expected: 1n, current: 2n });
    expect(toWrongExpectedRevision(behind, 's', 1n)).toMatchObject({ stream: 's', expected: 1n, actual: 2n });
    const absent = new WrongExpectedVersionError(undefined, { streamName: 's', expected: STREAM_EXISTS, current: NO_STREAM });
    const mapped = toWrongExpectedRevision(absent, 's', 'stream_exists');
    expect(mapped).toBeInstanceOf(WrongExpectedRevision);
    expect(mapped).toMatchObject({ expected: 'stream_exists', actual: 'no_stream' });
  });

  it('recognises system events by type or stream', () => {
    expect(isSystemEvent({ type: '$metadata', streamId: '$$tenant-1' })).toBe(true);
    expect(isSystemEvent({ type: '$>', streamId: '$et-LimitChanged' })).toBe(true);
    expect(isSystemEvent({ type: 'LimitChanged', streamId: '$projections-x' })).toBe(true);
    expect(isSystemEvent({ type: 'LimitChanged', streamId: 'tenant-1' })).toBe(false);
  });

  it('converts a recorded event with its $all position', () => {
    expect(toRecordedEvent(recorded({}))).toEqual({
      id: '6f1c2a9e-3a53-4d0c-9a39-0f3f4a8b2c11',
      stream: 'tenant-1',
      revision: 4n,
      position: { commit: 1_234n, prepare: 1_200n },
      type: 'LimitChanged',
      data: { limit: 10 },
      metadata: { actor: 'ops@x' },
      recordedAt: new Date('2026-11-29T12:00:00Z'),
    });
    expect(toRecordedEvent(recorded({ metadata: undefined })).metadata).toEqual({});
  });

  it('refuses an event without a position (a server older than 22.6 on stream reads)', () => {
    expect(() => toRecordedEvent(recorded({ position: undefined as never }))).toThrow(/22\.6 or later/);
    const noPosition = { commit: 18_446_744_073_709_551_615n, prepare: 18_446_744_073_709_551_615n };
    expect(() => toRecordedEvent(recorded({ position: noPosition }))).toThrow(/22\.6 or later/);
  });
});
