// The EventStoreDB adapter over a fake of the client's boundary (EsdbClient) that answers with the client's
// own results and error classes: what a real server does that cannot be made to happen on demand (a copy of
// a batch dropped as "idempotent, not ready", an append over the size limit, a tombstoned stream, a
// subscription that fails before it is iterated). The contract suite covers the rest on a real server.
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import {
  DeadlineExceededError,
  MaxAppendSizeExceededError,
  StreamDeletedError,
  StreamNotFoundError,
  UnavailableError,
  WrongExpectedVersionError,
  type AppendResult as EsdbAppendResult,
  type JSONEventData,
} from '@eventstore/db-client';
import { AppendTooLarge, StreamDeleted, WrongExpectedRevision, type NewEvent, type RecordedEvent } from '../../../src/ledger/eventStore.ts';
import { createEventStoreDbEventStore, type EsdbClient } from '../../../src/ledger/eventstoredb/index.ts';

const NO_POSITION = 18_446_744_073_709_551_615n;

interface FakeEvent {
  data?: unknown;
  streamId: string;
  id: string;
  revision: bigint;
  type: string;
  position: { commit: bigint; prepare: bigint };
}

const stored = (streamId: string, revision: number, id: string, commit: number, type = 'Noted'): FakeEvent => ({
  streamId,
  id,
  revision: BigInt(revision),
  type,
  position: { commit: BigInt(commit), prepare: BigInt(commit) },
});

const resolved = (event: FakeEvent) => ({ event: { isJson: true, data: {}, metadata: {}, created: new Date(0), ...event } });

/** A read call: yields `events` then fails with `error`, and counts whether it was cancelled. */
function fakeRead(events: FakeEvent[], error?: unknown) {
  const read = Readable.from(
    (async function* () {
      for (const each of events) yield resolved(each);
      if (error) throw error;
    })(),
    { objectMode: true },
  ) as Readable & { cancel: () => Promise<void> };
  read.cancel = vi.fn(async () => {});
  return read;
}

type AppendAnswer = EsdbAppendResult | Error;

function fakeClient(script: { appends?: AppendAnswer[]; streamReads?: (() => ReturnType<typeof fakeRead>)[]; allReads?: (() => ReturnType<typeof fakeRead>)[] } = {}) {
  const appends = [...(script.appends ?? [])];
  const streamReads = [...(script.streamReads ?? [])];
  const allReads = [...(script.allReads ?? [])];
  const reads: ReturnType<typeof fakeRead>[] = [];
  const take = (queue: (() => ReturnType<typeof fakeRead>)[]) => {
    const read = (queue.shift() ?? (() => fakeRead([])))();
    reads.push(read);
    return read;
  };
  const client = {
    appendToStream: vi.fn(async (_stream: string, _events: JSONEventData[], _options: unknown) => {
      const answer = appends.shift();
      if (!answer) throw new Error('the fake has no more answers');
      if (answer instanceof Error) throw answer;
      return answer;
    }),
    readStream: vi.fn((_stream: string, _options: unknown) => take(streamReads)),
    readAll: vi.fn((_options: unknown) => take(allReads)),
    subscribeToAll: vi.fn(),
    dispose: vi.fn(async () => {}),
  };
  return { client, reads, store: createEventStoreDbEventStore(client as unknown as EsdbClient, { appendRetry: { attempts: 4, firstDelayMs: 1 } }) };
}

const ID_A = '0b0e5b6c-41b2-4f6f-8f56-0f7c1e0f0a01';
const ID_B = '0b0e5b6c-41b2-4f6f-8f56-0f7c1e0f0a02';
const batch: NewEvent[] = [
  { id: ID_A, type: 'Opened', data: { n: 1 } },
  { id: ID_B, type: 'Noted', data: { n: 2 } },
];
const success = (revision: bigint, commit?: bigint): EsdbAppendResult => ({
  success: true,
  nextExpectedRevision: revision,
  position: commit === undefined ? undefined : { commit, prepare: commit },
});

describe('EventStoreDB append over the client boundary', () => {
  it('sends the same prepared batch again after DeadlineExceeded and Unavailable, then answers what the server stored', async () => {
    const { client, store } = fakeClient({ appends: [new DeadlineExceededError(), new UnavailableError(), success(1n, 500n)] });
    const result = await store.append('s', batch);
    expect(result).toEqual({ nextRevision: 1n, position: { commit: 500n, prepare: 500n } });
    expect(client.appendToStream).toHaveBeenCalledTimes(3);
    const sent = client.appendToStream.mock.calls.map(([stream, events, options]) => [stream, events.map((each) => each.id), options]);
    expect(new Set(sent.map((each) => JSON.stringify(each, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))))).toHaveProperty('size', 1);
    expect(sent[0]![1]).toEqual([ID_A, ID_B]);
  });

  it('after the last failed attempt answers with the batch when the stream holds it (explicit revision: right after it)', async () => {
    const { client, store } = fakeClient({
      appends: Array.from({ length: 4 }, () => new DeadlineExceededError()),
      streamReads: [() => fakeRead([stored('s', 3, ID_A, 700), stored('s', 4, ID_B, 710)])],
    });
    expect(await store.append('s', batch, { expectedRevision: 2n })).toEqual({ nextRevision: 4n, position: { commit: 710n, prepare: 710n } });
    expect(client.appendToStream).toHaveBeenCalledTimes(4);
    expect(client.readStream).toHaveBeenCalledWith('s', expect.objectContaining({ fromRevision: 3n, maxCount: 2 }));
  });

  it("after the last failed attempt looks back from the end with 'any', and fails with the last error when the batch is not there", async () => {
    const found = fakeClient({
      appends: Array.from({ length: 4 }, () => new UnavailableError()),
      streamReads: [() => fakeRead([stored('s', 9, ID_B, 90), stored('s', 8, ID_A, 80), stored('s', 7, ID_B.replace('02', '77'), 70)])],
    });
    expect(await found.store.append('s', batch)).toEqual({ nextRevision: 9n, position: { commit: 90n, prepare: 90n } });

    const deadline = new DeadlineExceededError();
    const missing = fakeClient({ appends: [new UnavailableError(), new UnavailableError(), new UnavailableError(), deadline], streamReads: [() => fakeRead([stored('s', 0, ID_A, 5)])] });
    await expect(missing.store.append('s', batch)).rejects.toBe(deadline);
    expect(missing.client.appendToStream).toHaveBeenCalledTimes(4);

    const unreadable = fakeClient({ appends: Array.from({ length: 4 }, () => new UnavailableError()), streamReads: [() => fakeRead([], new StreamNotFoundError(undefined, 's'))] });
    await expect(unreadable.store.append('s', batch)).rejects.toBeInstanceOf(UnavailableError);
  });

  it('does not retry refusals, and gives them in the port’s words', async () => {
    const wrong = fakeClient({ appends: [new WrongExpectedVersionError(undefined, { streamName: 's', expected: 1n, current: 4n })] });
    await expect(wrong.store.append('s', batch, { expectedRevision: 1n })).rejects.toMatchObject({ constructor: WrongExpectedRevision, expected: 1n, actual: 4n });

    const tooLarge = fakeClient({ appends: [new MaxAppendSizeExceededError(undefined, 1_048_576)] });
    const refused = await tooLarge.store.append('s', batch).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppendTooLarge);
    expect(refused).toMatchObject({ stream: 's', maxBytes: 1_048_576 });

    const deleted = fakeClient({ appends: [new StreamDeletedError(undefined, 's')] });
    await expect(deleted.store.append('s', batch)).rejects.toBeInstanceOf(StreamDeleted);

    for (const each of [wrong, tooLarge, deleted]) expect(each.client.appendToStream).toHaveBeenCalledTimes(1);
    expect(wrong.client.readStream).not.toHaveBeenCalled();
  });

  it('uses the position the append returned, and reads back only when the server gave none', async () => {
    const given = fakeClient({ appends: [success(1n, 42n)] });
    expect((await given.store.append('s', batch)).position).toEqual({ commit: 42n, prepare: 42n });
    expect(given.client.readStream).not.toHaveBeenCalled();

    for (const none of [undefined, NO_POSITION]) {
      const missing = fakeClient({ appends: [success(1n, none)], streamReads: [() => fakeRead([stored('s', 1, ID_B, 77)])] });
      expect(await missing.store.append('s', batch)).toEqual({ nextRevision: 1n, position: { commit: 77n, prepare: 77n } });
      expect(missing.client.readStream).toHaveBeenCalledWith('s', expect.objectContaining({ fromRevision: 1n, maxCount: 1 }));
    }
  });
});

describe('EventStoreDB reads over the client boundary', () => {
  it('cancels the head-position read it leaves at the first ledger event', async () => {
    const { store, reads } = fakeClient({ allReads: [() => fakeRead(Array.from({ length: 100 }, (_, n) => stored('s', 100 - n, crypto.randomUUID(), 1000 - n)))] });
    expect(await store.headPosition()).toEqual({ commit: 1000n, prepare: 1000n });
    expect(reads).toHaveLength(1);
    expect(reads[0]!.cancel).toHaveBeenCalledTimes(1);
  });

  it('pages backwards past system events without overlap, and reports an empty ledger at a short page', async () => {
    const system = (commit: number) => stored('$stats', commit, crypto.randomUUID(), commit, '$statsCollected');
    const { client, store, reads } = fakeClient({
      allReads: [() => fakeRead(Array.from({ length: 100 }, (_, n) => system(500 - n))), () => fakeRead([system(400), system(399)])],
    });
    expect(await store.headPosition()).toBeUndefined();
    expect(client.readAll).toHaveBeenLastCalledWith(expect.objectContaining({ fromPosition: { commit: 401n, prepare: 401n }, direction: 'backwards' }));
    // Both pages were read to their end: nothing left open, nothing to cancel.
    for (const read of reads) expect(read.cancel).not.toHaveBeenCalled();
  });

  it('cancels a readAll page it stops reading once it has maxCount events', async () => {
    const { store, reads } = fakeClient({ allReads: [() => fakeRead([1, 2, 3].map((n) => stored('s', n, crypto.randomUUID(), n * 10)))] });
    const page = await store.readAll('start', 2);
    expect(page.map((each: RecordedEvent) => each.revision)).toEqual([1n, 2n]);
    expect(reads[0]!.cancel).toHaveBeenCalledTimes(1);
  });

  it('reads an absent stream as empty and a tombstoned one as StreamDeleted', async () => {
    const { store } = fakeClient({
      streamReads: [() => fakeRead([], new StreamNotFoundError(undefined, 'gone')), () => fakeRead([], new StreamDeletedError(undefined, 'deleted'))],
    });
    expect(await store.readStream('gone')).toEqual([]);
    await expect(store.readStream('deleted')).rejects.toMatchObject({ constructor: StreamDeleted, stream: 'deleted' });
  });
});

describe('EventStoreDB ledger identity over the client boundary', () => {
  const identified = (ledgerId: string) => ({ ...stored('governance-ledger-identity', 0, ID_A, 1, 'LedgerIdentified'), data: { ledgerId } });

  it('names a server without an identity once, and reads the name another process wrote first', async () => {
    const fresh = fakeClient({ appends: [success(0n, 1n)] });
    // Absent, then holding what the append sent.
    fresh.client.readStream.mockImplementationOnce(() => fakeRead([], new StreamNotFoundError(undefined, 'governance-ledger-identity')));
    fresh.client.readStream.mockImplementationOnce(() => fakeRead([identified((fresh.client.appendToStream.mock.calls[0]![1][0]!.data as { ledgerId: string }).ledgerId)]));
    const identity = await fresh.store.identity();
    expect(identity.kind).toBe('eventstoredb');
    expect(fresh.client.appendToStream).toHaveBeenCalledWith('governance-ledger-identity', [expect.objectContaining({ type: 'LedgerIdentified', data: { ledgerId: identity.id } })], { expectedRevision: 'no_stream' });
    expect(await fresh.store.identity()).toBe(identity);

    const raced = fakeClient({
      appends: [new WrongExpectedVersionError(undefined, { streamName: 'governance-ledger-identity', expected: 'no_stream', current: 0n })],
      streamReads: [() => fakeRead([], new StreamNotFoundError(undefined, 'x')), () => fakeRead([identified('first-writer')])],
    });
    expect(await raced.store.identity()).toEqual({ kind: 'eventstoredb', id: 'first-writer' });
  });

  it('keeps the identity stream out of the ledger’s reads', async () => {
    const { store } = fakeClient({ allReads: [() => fakeRead([identified('x'), stored('s', 0, ID_B, 5)])] });
    expect((await store.readAll('start', 10)).map((each) => each.stream)).toEqual(['s']);
  });
});

describe('EventStoreDB subscriptions over the client boundary', () => {
  const subscriptionSource = () => Object.assign(new PassThrough({ objectMode: true }), { unsubscribe: vi.fn(async () => {}) });

  it('keeps a failure that comes before the first next() and throws it there, instead of ending the process', async () => {
    const source = subscriptionSource();
    const { client, store } = fakeClient();
    client.subscribeToAll.mockReturnValue(source);
    const subscription = store.subscribe('start');
    const failure = new UnavailableError();
    source.emit('error', failure);
    await new Promise((resolve) => setImmediate(resolve));
    await expect(subscription[Symbol.asyncIterator]().next()).rejects.toBe(failure);
    expect(source.unsubscribe).toHaveBeenCalledTimes(1);
    await subscription.close();
  });

  it('cancels the call when the caller breaks out of its loop', async () => {
    const source = subscriptionSource();
    const { client, store } = fakeClient();
    client.subscribeToAll.mockReturnValue(source);
    const subscription = store.subscribe('start');
    source.write(resolved(stored('s', 0, ID_A, 10)));
    for await (const each of subscription) {
      expect(each.id).toBe(ID_A);
      break;
    }
    expect(source.unsubscribe).toHaveBeenCalledTimes(1);
    await subscription.close();
    expect(source.unsubscribe).toHaveBeenCalledTimes(1);
  });
});
