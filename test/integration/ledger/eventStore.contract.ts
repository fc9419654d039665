// The one suite of behaviour every EventStore adapter must show. Adapters run it from their own test file:
// eventStoreContract('postgres on pglite', async () => ({ store, dispose })). Streams are named per test
// with a random prefix, so the suite also runs against a shared server that holds other events; and each test
// reads and subscribes from the head it took at its start, so a persistent server's history (every earlier
// run's events) costs it nothing.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Checkpoint,
  InvalidAppend,
  WrongExpectedRevision,
  comparePositions,
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
} from '../../../src/ledger/eventStore.ts';
import { readAllOf, readAllWhen, VISIBLE_WITHIN_MS } from '../../support/readLedger.ts';
import { waitFor } from '../../support/waitFor.ts';

export interface ContractExtras {
  /**
   * Appends in a transaction that stays open until commit() is called; resolves once the events are
   * written but not yet committed. Adapters that cannot hold a transaction open while others write
   * (PGlite is one connection; EventStoreDB has no client transactions) leave it out.
   */
  appendHeldOpen?(stream: string, events: readonly NewEvent[]): Promise<{ commit(): Promise<AppendResult> }>;
}

export interface OpenedStore {
  store: EventStore;
  dispose(): Promise<void>;
  extra?: ContractExtras;
}

const event = (type: string, data: unknown = {}): NewEvent => ({ id: randomUUID(), type, data });
const ids = (events: readonly { id?: string }[]) => events.map((each) => each.id);

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected the call to be refused'),
    (error: unknown) => error,
  );
}

/** Collects a subscription's events of streams with `prefix` after `from` in the background until closed. */
function collect(store: EventStore, prefix: string, from: Checkpoint, types?: readonly string[]) {
  const seen: RecordedEvent[] = [];
  const subscription = store.subscribe(from, types ? { types } : undefined);
  const done = (async () => {
    for await (const each of subscription) if (each.stream.startsWith(prefix)) seen.push(each);
  })();
  return {
    seen,
    async close() {
      await subscription.close();
      await done;
    },
  };
}

export function eventStoreContract(name: string, openStore: () => Promise<OpenedStore>): void {
  describe(`EventStore contract: ${name}`, () => {
    // One store for the whole suite (opening PGlite takes seconds); each test keeps to its own streams.
    let opened: OpenedStore | undefined;
    beforeAll(async () => {
      opened = await openStore();
    });
    afterAll(async () => {
      await opened?.dispose();
    });
    // Each test gets its own stream prefix and the ledger's head at its start (`from`): what it appends comes after.
    const withStore = (test: (opened: OpenedStore, prefix: string, from: Checkpoint) => Promise<void>) => async () =>
      test(opened!, `contract-${randomUUID()}`, (await opened!.store.headPosition()) ?? 'start');

    describe('append and read', () => {
      it('stores a batch with 0-based revisions and reads it back in order', withStore(async ({ store }, prefix) => {
        const stream = `${prefix}-a`;
        const batch = [event('Opened', { n: 1 }), { ...event('Noted', { n: 2 }), metadata: { actor: 'ops@x', reason: 'test' } }];
        const result = await store.append(stream, batch);
        expect(result.nextRevision).toBe(1n);

        const read = await store.readStream(stream);
        expect(read.map((each) => [each.id, each.revision, each.type, each.data])).toEqual([
          [batch[0]!.id, 0n, 'Opened', { n: 1 }],
          [batch[1]!.id, 1n, 'Noted', { n: 2 }],
        ]);
        expect(read[1]!.metadata).toMatchObject({ actor: 'ops@x', reason: 'test' });
        expect(read[0]!.stream).toBe(stream);
        expect(read[0]!.recordedAt).toBeInstanceOf(Date);
        expect(comparePositions(read[1]!.position, result.position)).toBe(0);
      }));

      it('reads forwards and backwards from a revision, up to maxCount', withStore(async ({ store }, prefix) => {
        const stream = `${prefix}-a`;
        await store.append(stream, [0, 1, 2, 3, 4].map((n) => event('Counted', { n })));
        const revisions = async (options: Parameters<EventStore['readStream']>[1]) =>
          (await store.readStream(stream, options)).map((each) => each.revision);
        expect(await revisions({ fromRevision: 2n })).toEqual([2n, 3n, 4n]);
        expect(await revisions({ fromRevision: 1n, maxCount: 2 })).toEqual([1n, 2n]);
        expect(await revisions({ direction: 'backwards' })).toEqual([4n, 3n, 2n, 1n, 0n]);
        expect(await revisions({ direction: 'backwards', fromRevision: 2n, maxCount: 2 })).toEqual([2n, 1n]);
        expect(await revisions({ direction: 'backwards', fromRevision: 'end', maxCount: 1 })).toEqual([4n]);
        expect(await revisions({ fromRevision: 9n })).toEqual([]);
      }));

      it('reads an absent stream as empty', withStore(async ({ store }, prefix) => {
        expect(await store.readStream(`${prefix}-nothing`)).toEqual([]);
        expect(await store.readStream(`${prefix}-nothing`, { direction: 'backwards' })).toEqual([]);
      }));

      it('refuses malformed appends with InvalidAppend and stores nothing', withStore(async ({ store }, prefix) => {
        const stream = `${prefix}-a`;
        const same = randomUUID();
        const malformed: [string, NewEvent[]][] = [
          [stream, []],
          ['', [event('Opened')]],
          [stream, [{ id: 'not-a-uuid', type: 'Opened', data: {} }]],
          [stream, [{ id: same, type: 'Opened', data: {} }, { id: same, type: 'Opened', data: {} }]],
          [stream, [event('Fine'), { ...event(''), type: '' }]],
          [stream, [event('Fine'), { ...event('Big'), data: { n: 1n } }]],
        ];
        for (const [target, events] of malformed) {
          expect(await rejection(store.append(target, events))).toBeInstanceOf(InvalidAppend);
        }
        expect(await store.readStream(stream)).toEqual([]);
      }));
    });

    describe('expected revision', () => {
      const cases: { title: string; existing: number; expected: ExpectedRevision; actual?: bigint | 'no_stream' }[] = [
        { title: "'any' on an absent stream", existing: 0, expected: 'any' },
        { title: "'any' on a stream with events", existing: 2, expected: 'any' },
        { title: "'no_stream' on an absent stream", existing: 0, expected: 'no_stream' },
        { title: "'no_stream' on a stream with events", existing: 2, expected: 'no_stream', actual: 1n },
        { title: "'stream_exists' on an absent stream", existing: 0, expected: 'stream_exists', actual: 'no_stream' },
        { title: "'stream_exists' on a stream with events", existing: 2, expected: 'stream_exists' },
        { title: 'the current revision', existing: 3, expected: 2n },
        { title: 'a revision behind the stream', existing: 3, expected: 1n, actual: 2n },
        { title: 'a revision ahead of the stream', existing: 3, expected: 5n, actual: 2n },
        { title: 'revision 0 on an absent stream', existing: 0, expected: 0n, actual: 'no_stream' },
      ];
      for (const { title, existing, expected, actual } of cases) {
        it(`${actual === undefined ? 'accepts' : 'refuses'} ${title}`, withStore(async ({ store }, prefix) => {
          const stream = `${prefix}-a`;
          if (existing > 0) await store.append(stream, Array.from({ length: existing }, () => event('Before')));
          const attempt = store.append(stream, [event('Attempt')], { expectedRevision: expected });
          if (actual === undefined) {
            expect((await attempt).nextRevision).toBe(BigInt(existing));
            expect(await store.readStream(stream)).toHaveLength(existing + 1);
          } else {
            const error = await rejection(attempt);
            expect(error).toBeInstanceOf(WrongExpectedRevision);
            expect(error).toMatchObject({ stream, expected, actual });
            expect(await store.readStream(stream)).toHaveLength(existing);
          }
        }));
      }

      it('lets exactly one of many writers expecting the same revision win', withStore(async ({ store }, prefix) => {
        const stream = `${prefix}-a`;
        await store.append(stream, [event('Opened')]);
        const outcomes = await Promise.allSettled(
          Array.from({ length: 6 }, () => store.append(stream, [event('Raced')], { expectedRevision: 0n })),
        );
        expect(outcomes.filter((each) => each.status === 'fulfilled')).toHaveLength(1);
        for (const each of outcomes) {
          if (each.status === 'rejected') expect(each.reason).toBeInstanceOf(WrongExpectedRevision);
        }
        expect(await store.readStream(stream)).toHaveLength(2);
      }));

      it("gives concurrent 'any' writers contiguous revisions", withStore(async ({ store }, prefix) => {
        const stream = `${prefix}-a`;
        await Promise.all(Array.from({ length: 8 }, (_, n) => store.append(stream, [event('Raced', { n }), event('Raced', { n })])));
        const read = await store.readStream(stream);
        expect(read.map((each) => each.revision)).toEqual(Array.from({ length: 16 }, (_, n) => BigInt(n)));
      }));
    });

    // What both adapters keep (see NewEvent.id): a batch sent again with the same ids at the same explicit
    // expected revision is answered as stored, however far the stream moved on since. With 'any' or
    // 'stream_exists' EventStoreDB only checks a bounded cache of recent ids, so nothing here relies on them.
    describe('idempotent ids (at an explicit expected revision)', () => {
      it('does not store a retried batch twice and returns the stored positions', withStore(async ({ store }, prefix) => {
        const stream = `${prefix}-a`;
        const batch = [event('Opened'), event('Noted')];
        const first = await store.append(stream, batch, { expectedRevision: 'no_stream' });
        const retried = await store.append(stream, batch, { expectedRevision: 'no_stream' });
        expect(retried.nextRevision).toBe(first.nextRevision);
        expect(comparePositions(retried.position, first.position)).toBe(0);
        expect(ids(await store.readStream(stream))).toEqual(ids(batch));
      }));

      it('does not store an id again after the stream moved on', withStore(async ({ store }, prefix) => {
        const stream = `${prefix}-a`;
        const once = event('Opened');
        const first = await store.append(stream, [once], { expectedRevision: 'no_stream' });
        await store.append(stream, [event('Noted')], { expectedRevision: 0n });
        const again = await store.append(stream, [once], { expectedRevision: 'no_stream' });
        expect(again.nextRevision).toBe(0n);
        expect(comparePositions(again.position, first.position)).toBe(0);
        expect(await store.readStream(stream)).toHaveLength(2);
      }));

      it('answers a batch retried at its numeric revision as stored after the stream moved on', withStore(async ({ store }, prefix) => {
        const stream = `${prefix}-a`;
        await store.append(stream, [event('Opened')], { expectedRevision: 'no_stream' });
        const retried = [event('Noted'), event('Noted')];
        const first = await store.append(stream, retried, { expectedRevision: 0n });
        await store.append(stream, [event('Closed')], { expectedRevision: 2n });
        const again = await store.append(stream, retried, { expectedRevision: 0n });
        expect(again.nextRevision).toBe(2n);
        expect(comparePositions(again.position, first.position)).toBe(0);
        expect((await store.readStream(stream)).map((each) => each.type)).toEqual(['Opened', 'Noted', 'Noted', 'Closed']);
        // Other ids at that revision are a conflict, not a duplicate.
        const error = await rejection(store.append(stream, [event('Noted')], { expectedRevision: 0n }));
        expect(error).toMatchObject({ constructor: WrongExpectedRevision, stream, expected: 0n, actual: 3n });
      }));

      it('stores an id once when copies of the same batch are appended concurrently', withStore(async ({ store }, prefix) => {
        const stream = `${prefix}-a`;
        const batch = [event('Opened'), event('Noted')];
        const results = await Promise.all(Array.from({ length: 4 }, () => store.append(stream, batch, { expectedRevision: 'no_stream' })));
        expect(new Set(results.map((each) => each.nextRevision))).toEqual(new Set([1n]));
        expect(ids(await store.readStream(stream))).toEqual(ids(batch));
      }));
    });

    describe('global order', () => {
      it('reads every stream in one order that follows the appends, page by page', withStore(async ({ store }, prefix, from) => {
        const appended: NewEvent[] = [];
        for (let round = 0; round < 5; round++) {
          for (const name of ['a', 'b', 'c']) {
            const batch = [event('Counted', { round, name }), event('Counted', { round, name })];
            await store.append(`${prefix}-${name}`, batch);
            appended.push(...batch);
          }
        }
        const all = await readAllWhen(store, prefix, appended.length, 4, from);
        expect(ids(all)).toEqual(ids(appended));
        for (let i = 1; i < all.length; i++) expect(comparePositions(all[i - 1]!.position, all[i]!.position)).toBe(-1);
        expect(await readAllOf(store, prefix, 1000, from)).toEqual(all);
      }));

      it('reports a head position at or after the last append, and readAll reaches it', withStore(async ({ store }, prefix, from) => {
        const appended = await store.append(`${prefix}-a`, [event('Opened'), event('Noted')]);
        const head = await store.headPosition();
        expect(head).toBeDefined();
        expect(comparePositions(head!, appended.position)).toBeGreaterThanOrEqual(0);
        const [, last] = await readAllWhen(store, prefix, 2, undefined, from);
        expect(comparePositions(last!.position, appended.position)).toBe(0);
      }));

      it('reads nothing after the last event', withStore(async ({ store }, prefix, from) => {
        await store.append(`${prefix}-a`, [event('Opened')]);
        const [only] = await readAllWhen(store, prefix, 1, undefined, from);
        expect((await store.readAll(only!.position, 10)).filter((each) => each.stream.startsWith(prefix))).toEqual([]);
      }));
    });

    describe('reading some types', () => {
      it('reads only the asked types, in the global order, page by page', withStore(async ({ store }, prefix, from) => {
        const wanted = [`${prefix}.Wanted`, `${prefix}.AlsoWanted`];
        const appended: NewEvent[] = [];
        for (let round = 0; round < 6; round++) {
          const batch = [event(`${prefix}.Other`), event(wanted[round % 2]!, { round }), event(`${prefix}.Other`)];
          await store.append(`${prefix}-${round % 3}`, batch);
          appended.push(batch[1]!);
        }
        await readAllWhen(store, prefix, 18, undefined, from);
        const found: RecordedEvent[] = [];
        let after: Parameters<EventStore['readAll']>[0] = from;
        for (;;) {
          const page = await store.readAll(after, 4, { types: wanted });
          if (page.length === 0) break;
          found.push(...page);
          after = page.at(-1)!.position;
        }
        expect(ids(found)).toEqual(ids(appended));
        expect(await store.readAll('start', 10, { types: [] })).toEqual([]);
      }));

      it('a page says how far it looked: a short page reaches the head, past other types', withStore(async ({ store }, prefix, from) => {
        const type = `${prefix}.Wanted`;
        await store.append(`${prefix}-a`, [event(type), event(`${prefix}.Other`)]);
        const last = await store.append(`${prefix}-b`, [event(`${prefix}.Other`), event(`${prefix}.Other`)]);
        let page = await store.readAllPage(from, 10, { types: [type] });
        await waitFor(async () => {
          page = await store.readAllPage(from, 10, { types: [type] });
          return page.through !== 'start' && comparePositions(page.through, last.position) >= 0;
        }, { timeoutMs: VISIBLE_WITHIN_MS, description: 'the page to reach the last append' });
        expect(page.events.filter((each) => each.stream.startsWith(prefix)).map((each) => each.type)).toEqual([type]);
        // Nothing of the type after it: the next page is empty and looks at least as far.
        const next = await store.readAllPage(page.through, 10, { types: [type] });
        expect(next.events).toEqual([]);
        expect(comparePositions(next.through as { commit: bigint; prepare: bigint }, page.through as { commit: bigint; prepare: bigint })).toBeGreaterThanOrEqual(0);
        // A full page ends at its last event.
        const full = await store.readAllPage(from, 1, { types: [type] });
        expect(full.events).toHaveLength(1);
        expect(full.through).toEqual(full.events[0]!.position);
      }));

      it('finds the first event still pending of some types, ignoring others', withStore(async ({ store }, prefix) => {
        const type = `${prefix}.Wanted`;
        const first = await store.append(`${prefix}-a`, [event(`${prefix}.Other`)]);
        expect(await store.firstPending(first.position, { types: [type] })).toBeUndefined();
        await store.append(`${prefix}-a`, [event(`${prefix}.Other`), event(type, { n: 1 }), event(type, { n: 2 })]);
        const pending = await store.firstPending(first.position, { types: [type] });
        expect(pending).toMatchObject({ type, data: { n: 1 } });
        expect(await store.firstPending(pending!.position, { types: [type] })).toMatchObject({ type, data: { n: 2 } });
      }));
    });

    describe('subscribe', () => {
      it('catches up, then follows live appends in readAll order', withStore(async ({ store }, prefix, from) => {
        await store.append(`${prefix}-a`, [event('Opened'), event('Noted')]);
        await store.append(`${prefix}-b`, [event('Opened')]);
        const subscriber = collect(store, prefix, from);
        try {
          await waitFor(() => subscriber.seen.length === 3, { timeoutMs: VISIBLE_WITHIN_MS, description: 'the subscriber to catch up' });
          await store.append(`${prefix}-a`, [event('Noted')]);
          await store.append(`${prefix}-c`, [event('Opened'), event('Noted')]);
          await waitFor(() => subscriber.seen.length === 6, { timeoutMs: VISIBLE_WITHIN_MS, description: 'the live events' });
          expect(ids(subscriber.seen)).toEqual(ids(await readAllWhen(store, prefix, 6, undefined, from)));
        } finally {
          await subscriber.close();
        }
      }));

      it('delivers only the requested types', withStore(async ({ store }, prefix, from) => {
        const subscriber = collect(store, prefix, from, ['Wanted']);
        try {
          const wanted = [event('Wanted'), event('Wanted')];
          await store.append(`${prefix}-a`, [wanted[0]!, event('Other')]);
          await store.append(`${prefix}-b`, [event('Other'), wanted[1]!]);
          await waitFor(() => subscriber.seen.length === 2, { timeoutMs: VISIBLE_WITHIN_MS, description: 'the wanted events' });
          expect(ids(subscriber.seen)).toEqual(ids(wanted));
        } finally {
          await subscriber.close();
        }
      }));

      it('starts after a checkpoint', withStore(async ({ store }, prefix, from) => {
        await store.append(`${prefix}-a`, [event('Opened')]);
        const [first] = await readAllWhen(store, prefix, 1, undefined, from);
        const later = event('Noted');
        await store.append(`${prefix}-a`, [later]);
        const subscription = store.subscribe(first!.position);
        const seen: RecordedEvent[] = [];
        for await (const each of subscription) {
          if (each.stream.startsWith(prefix)) seen.push(each);
          if (seen.length === 1) break;
        }
        await subscription.close();
        expect(ids(seen)).toEqual([later.id]);
      }));

      it('ends the iteration when closed while waiting for events', withStore(async ({ store }, prefix, from) => {
        const subscriber = collect(store, prefix, from);
        await store.append(`${prefix}-a`, [event('Opened')]);
        await waitFor(() => subscriber.seen.length === 1, { timeoutMs: VISIBLE_WITHIN_MS, description: 'the subscriber to see the event' });
        await subscriber.close();
      }));
    });

    describe('race', () => {
      it('shows a subscriber every event of 8 concurrent writers exactly once, in readAll order', withStore(async ({ store, extra }, prefix, from) => {
        const writers = 8;
        const rounds = 4;
        const subscriber = collect(store, prefix, from);
        const appended: NewEvent[] = [];
        // Writers 0, 3 and 6 hold their first append's transaction open while the others write and
        // commit; they commit last, in reverse order, so commits land out of transaction order.
        const holding = extra?.appendHeldOpen ? [0, 3, 6] : [];
        try {
          const held: { commit(): Promise<AppendResult> }[] = [];
          for (const writer of holding) {
            const batch = [event('Raced', { writer }), event('Raced', { writer })];
            held.push(await extra!.appendHeldOpen!(`${prefix}-w${writer}`, batch));
            appended.push(...batch);
          }
          const freeWriter = async (writer: number) => {
            for (let round = 0; round < rounds; round++) {
              const batch = [event('Raced', { writer, round }), event('Raced', { writer, round })];
              appended.push(...batch);
              await store.append(`${prefix}-w${writer}`, batch);
              const shared = event('Shared', { writer, round });
              appended.push(shared);
              await store.append(`${prefix}-shared`, [shared]);
            }
          };
          await Promise.all(Array.from({ length: writers }, (_, writer) => writer).filter((w) => !holding.includes(w)).map(freeWriter));
          if (held.length > 0) {
            // Everything committed so far came after the held transactions began: readers must wait.
            expect(await readAllOf(store, prefix, undefined, from)).toEqual([]);
            expect(subscriber.seen).toEqual([]);
            for (const each of held.reverse()) await each.commit();
          }
          await waitFor(() => subscriber.seen.length >= appended.length, { timeoutMs: VISIBLE_WITHIN_MS, description: 'the subscriber to see every event' });
          const all = await readAllWhen(store, prefix, appended.length, undefined, from);
          expect(all).toHaveLength(appended.length);
          expect(new Set(ids(all))).toEqual(new Set(ids(appended)));
          expect(ids(subscriber.seen)).toEqual(ids(all));
        } finally {
          await subscriber.close();
        }
      }));
    });
  });
}
