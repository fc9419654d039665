// appendStreamsInTransaction (PostgreSQL adapter): several streams in one call, with each stream getting
// what appendInTransaction would give it, all or nothing, and the streams' locks taken in one fixed order.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnEachStorage, type TestDb } from '../../support/databases.ts';
import { readAllWhen, readWholeLedger, VISIBLE_WITHIN_MS } from '../../support/readLedger.ts';
import { waitFor } from '../../support/waitFor.ts';
import { createPostgresEventStore } from '../../../src/ledger/postgres/postgresEventStore.ts';
import { appendInTransaction, appendStreamsInTransaction, STREAM_LOCK_CLASS } from '../../../src/ledger/postgres/appendInTransaction.ts';
import { InvalidAppend, WrongExpectedRevision, comparePositions, type EventStore, type NewEvent, type RecordedEvent } from '../../../src/ledger/eventStore.ts';

const probe = (data: unknown = {}): NewEvent => ({ id: randomUUID(), type: 'Probe', data });
const probes = (count: number) => Array.from({ length: count }, (_, n) => probe({ n }));
const ids = (events: readonly { id?: string }[]) => events.map((each) => each.id);

describeOnEachStorage('appendStreamsInTransaction on $name', (target) => {
  let opened: TestDb;
  let store: EventStore;
  beforeAll(async () => {
    opened = await target.open();
    store = createPostgresEventStore(opened.db, { pollIntervalMs: 250, heldBackPollMs: 50 });
  });
  afterAll(async () => {
    await store.close();
    await opened.dispose();
  });
  const fresh = () => `multi-${randomUUID()}`;

  it('gives each stream 0-based contiguous revisions following its own head, one result per stream in call order', async () => {
    const prefix = fresh();
    const [a, b, c] = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`];
    await store.append(b, probes(2));
    const results = await opened.db.transaction((tx) =>
      appendStreamsInTransaction(tx, [
        { stream: c, events: probes(3) },
        { stream: a, events: probes(1) },
        { stream: b, events: probes(2) },
      ]),
    );
    expect(results.map((each) => each.nextRevision)).toEqual([2n, 0n, 3n]);
    const again = await opened.db.transaction((tx) =>
      appendStreamsInTransaction(tx, [
        { stream: a, events: probes(2) },
        { stream: c, events: probes(1) },
      ]),
    );
    expect(again.map((each) => each.nextRevision)).toEqual([2n, 3n]);
    for (const [stream, count] of [[a, 3], [b, 4], [c, 4]] as const) {
      expect((await store.readStream(stream)).map((each) => each.revision)).toEqual(Array.from({ length: count }, (_, r) => BigInt(r)));
    }
    // Each result names its stream's last event.
    const lastOfC = (await store.readStream(c, { direction: 'backwards', maxCount: 1 }))[0]!;
    expect(again[1]!.position).toEqual(lastOfC.position);
    expect(await opened.db.transaction((tx) => appendStreamsInTransaction(tx, []))).toEqual([]);
  });

  it('checks every stream’s expected revision; one conflict stores nothing for any stream and names that stream', async () => {
    const prefix = fresh();
    const [a, b, c] = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`];
    await store.append(b, probes(2));
    const accepted = await opened.db.transaction((tx) =>
      appendStreamsInTransaction(tx, [
        { stream: a, events: probes(1), expectedRevision: 'no_stream' },
        { stream: b, events: probes(1), expectedRevision: 1n },
        { stream: c, events: probes(1), expectedRevision: 'any' },
      ]),
    );
    expect(accepted.map((each) => each.nextRevision)).toEqual([0n, 2n, 0n]);

    const outcome = await opened.db.transaction(async (tx) => {
      const refused = await appendStreamsInTransaction(tx, [
        { stream: a, events: probes(2), expectedRevision: 0n },
        { stream: b, events: probes(1), expectedRevision: 1n },
        { stream: c, events: probes(1), expectedRevision: 'stream_exists' },
      ]).catch((error: unknown) => error);
      // The caller's transaction is still usable.
      await appendInTransaction(tx, c, [probe()], { expectedRevision: 0n });
      return refused;
    });
    expect(outcome).toBeInstanceOf(WrongExpectedRevision);
    expect(outcome).toMatchObject({ stream: b, expected: 1n, actual: 2n });
    expect(await store.readStream(a)).toHaveLength(1);
    expect(await store.readStream(b)).toHaveLength(3);
    expect(await store.readStream(c)).toHaveLength(2);

    // The first conflicting stream in call order is named.
    const first = await opened.db
      .transaction((tx) =>
        appendStreamsInTransaction(tx, [
          { stream: `${prefix}-d`, events: probes(1), expectedRevision: 'stream_exists' },
          { stream: a, events: probes(1), expectedRevision: 'no_stream' },
        ]),
      )
      .catch((error: unknown) => error);
    expect(first).toMatchObject({ stream: `${prefix}-d`, actual: 'no_stream' });
    expect(await store.readStream(`${prefix}-d`)).toEqual([]);
    expect(await store.readStream(a)).toHaveLength(1);
  });

  it('stores an id once: a retried call is a no-op whatever its expected revisions, a partly stored batch stores only the new events', async () => {
    const prefix = fresh();
    const [a, b] = [`${prefix}-a`, `${prefix}-b`];
    const batchA = probes(2);
    const batchB = probes(3);
    const call = () => [
      { stream: a, events: batchA, expectedRevision: 'no_stream' as const },
      { stream: b, events: batchB, expectedRevision: 'no_stream' as const },
    ];
    const first = await opened.db.transaction((tx) => appendStreamsInTransaction(tx, call()));
    const retried = await opened.db.transaction((tx) => appendStreamsInTransaction(tx, call()));
    expect(retried).toEqual(first);
    expect(ids(await store.readStream(a))).toEqual(ids(batchA));
    expect(ids(await store.readStream(b))).toEqual(ids(batchB));

    // Stream a: only stored ids (a no-op, though its expected revision is wrong); stream b: one new event.
    const extra = probe();
    const mixed = await opened.db.transaction((tx) =>
      appendStreamsInTransaction(tx, [
        { stream: a, events: [batchA[1]!, batchA[0]!], expectedRevision: 'no_stream' },
        { stream: b, events: [batchB[2]!, extra, batchB[0]!], expectedRevision: 2n },
      ]),
    );
    expect(mixed[0]).toEqual(await opened.db.transaction((tx) => appendInTransaction(tx, a, [batchA[0]!])));
    expect(mixed[1]!.nextRevision).toBe(3n);
    expect(ids(await store.readStream(b))).toEqual([...ids(batchB), extra.id]);
  });

  it('refuses a stream named twice or an id in two streams of one call, storing nothing', async () => {
    const prefix = fresh();
    const [a, b] = [`${prefix}-a`, `${prefix}-b`];
    const shared = probe();
    await expect(
      opened.db.transaction((tx) => appendStreamsInTransaction(tx, [{ stream: a, events: [probe()] }, { stream: a, events: [probe()] }])),
    ).rejects.toBeInstanceOf(InvalidAppend);
    await expect(
      opened.db.transaction((tx) => appendStreamsInTransaction(tx, [{ stream: a, events: [shared] }, { stream: b, events: [probe(), shared] }])),
    ).rejects.toBeInstanceOf(InvalidAppend);
    await expect(
      opened.db.transaction((tx) => appendStreamsInTransaction(tx, [{ stream: a, events: [probe()] }, { stream: b, events: [] }])),
    ).rejects.toBeInstanceOf(InvalidAppend);
    expect((await readWholeLedger(store)).filter((each) => each.stream.startsWith(prefix))).toEqual([]);
  });

  it('reads the events in call order, each result at its stream’s last event, and shows a live subscriber each once', async () => {
    const prefix = fresh();
    const seen: RecordedEvent[] = [];
    const subscription = store.subscribe((await store.headPosition()) ?? 'start');
    const done = (async () => {
      for await (const each of subscription) if (each.stream.startsWith(prefix)) seen.push(each);
    })();
    try {
      const appended: NewEvent[] = [];
      const positions: unknown[] = [];
      for (let round = 0; round < 3; round++) {
        const appends = ['c', 'a', 'b'].map((name, s) => ({ stream: `${prefix}-${name}`, events: probes(s + round + 1) }));
        const results = await opened.db.transaction((tx) => appendStreamsInTransaction(tx, appends));
        for (const each of appends) appended.push(...each.events);
        positions.push(...results.map((each) => each.position));
      }
      const all = await readAllWhen(store, prefix, appended.length);
      expect(ids(all)).toEqual(ids(appended));
      for (let e = 1; e < all.length; e++) expect(comparePositions(all[e - 1]!.position, all[e]!.position)).toBeLessThan(0);
      const lastPositions = all.filter((each, e) => all[e + 1]?.stream !== each.stream).map((each) => each.position);
      expect(lastPositions).toEqual(positions);
      await waitFor(() => seen.length >= appended.length, { timeoutMs: VISIBLE_WITHIN_MS, description: 'the subscriber to see every event' });
      expect(ids(seen)).toEqual(ids(all));
    } finally {
      await subscription.close();
      await done;
    }
  });

  // PGlite has one connection: nothing there can wait for another transaction's lock.
  it.skipIf(target.name === 'pglite')('takes the streams’ locks in ascending key order, whatever the call’s order', async () => {
    const prefix = fresh();
    const keyOf = async (stream: string) => (await opened.db.query<{ key: number }>('SELECT hashtext($1) AS key', [stream])).rows[0]!.key;
    const named = await Promise.all(['x', 'y', 'z'].map(async (name) => ({ stream: `${prefix}-${name}`, key: await keyOf(`${prefix}-${name}`) })));
    named.sort((p, q) => p.key - q.key);
    const [low, middle, high] = named as [(typeof named)[0], (typeof named)[0], (typeof named)[0]];
    const holder = opened.connectAgain!({ max: 1 });
    const appender = opened.connectAgain!({ max: 1 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    try {
      let holding!: () => void;
      const isHolding = new Promise<void>((resolve) => (holding = resolve));
      const held = holder.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1, $2)', [STREAM_LOCK_CLASS, middle.key]);
        holding();
        await released;
      });
      await isHolding;
      let pid = 0;
      const appended = appender.transaction(async (tx) => {
        pid = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        return appendStreamsInTransaction(tx, [high, middle, low].map(({ stream }) => ({ stream, events: [probe()] })));
      });
      const advisory = async (granted: boolean) =>
        (
          await opened.db.query<{ key: number }>(
            // objid shows the int4 key as an unsigned oid.
            `SELECT (objid::bigint - CASE WHEN objid::bigint >= 2147483648 THEN 4294967296 ELSE 0 END)::int4 AS key FROM pg_locks
             WHERE locktype = 'advisory' AND pid = $1 AND classid = $2::int4::oid AND objsubid = 2 AND granted = $3`,
            [pid, STREAM_LOCK_CLASS, granted],
          )
        ).rows.map((row) => row.key);
      await waitFor(async () => pid !== 0 && (await advisory(false)).length > 0, { description: 'the append to wait for the held lock' });
      // Waiting for the middle key, it holds the lower one and not yet the higher one.
      expect(await advisory(false)).toEqual([middle.key]);
      expect(await advisory(true)).toEqual([low.key]);
      release();
      await held;
      expect((await appended).map((each) => each.nextRevision)).toEqual([0n, 0n, 0n]);
    } finally {
      release();
      await holder.close();
      await appender.close();
    }
  });

  it.skipIf(target.name === 'pglite')(
    'runs concurrent appends over overlapping stream sets from parallel clients without deadlock or loss',
    async () => {
      const prefix = fresh();
      const streams = Array.from({ length: 6 }, (_, s) => `${prefix}-s${s}`);
      const clients = Array.from({ length: 6 }, () => opened.connectAgain!({ max: 1 }));
      const appended = new Map<string, string[]>(streams.map((stream) => [stream, []]));
      try {
        await Promise.all(
          clients.map(async (client, c) => {
            for (let round = 0; round < 25; round++) {
              // 2 to 5 streams per call, in an order of their own, overlapping the other clients' sets.
              const count = 2 + ((c + round) % 4);
              const chosen = Array.from({ length: count }, (_, k) => streams[(c * 5 + round * 7 + k * 11) % streams.length]!);
              const distinct = [...new Set(chosen)].reverse();
              const appends = distinct.map((stream) => ({ stream, events: probes(1 + ((c + round) % 2)) }));
              if (round % 5 === 0) {
                // A single-stream append (one lock) among them.
                const alone = { stream: distinct[0]!, events: [probe()] };
                await client.transaction((tx) => appendInTransaction(tx, alone.stream, alone.events));
                appends.splice(0, appends.length, alone);
              } else {
                await client.transaction(async (tx) => {
                  await appendStreamsInTransaction(tx, appends);
                  // Appending again to a stream it holds takes no new lock.
                  if (round % 5 === 1) {
                    const more = probe();
                    await appendInTransaction(tx, appends[0]!.stream, [more]);
                    appends[0]!.events = [...appends[0]!.events, more];
                  }
                });
              }
              for (const { stream, events } of appends) appended.get(stream)!.push(...(ids(events) as string[]));
            }
          }),
        );
        for (const stream of streams) {
          const read = await store.readStream(stream);
          expect(read.map((each) => each.revision)).toEqual(read.map((_, r) => BigInt(r)));
          const readIds = new Set(ids(read));
          for (const id of appended.get(stream)!) expect(readIds.has(id)).toBe(true);
        }
      } finally {
        await Promise.all(clients.map((client) => client.close()));
      }
    },
  );
});
