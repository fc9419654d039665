// Keeps the Merkle tree up with the ledger: a follower of the global order, like a projection, woken by the
// ledger's NOTIFY (polling as the fallback) and paced so that a page hashes many appends at once. Appends never
// wait for it; a checkpoint signs only what it has added. With `ledger` (EVENTSTORE_URL) it reads the ledger
// through the EventStore port instead (portTree.ts), polling.
import type { Db } from '../../db/db.ts';
import type { EventStore } from '../eventStore.ts';
import { createAppendSignal } from '../postgres/appendSignal.ts';
import { appendPortTreePage, PORT_TREE_PAGE } from './portTree.ts';
import { appendTreePage, readTreeHead, type TreeHead } from './treeStore.ts';

export interface MerkleTreeOptions {
  /**
   * The ledger read through the EventStore port (EventStoreDB), when its events are not in `db`; absent, the
   * PostgreSQL ledger in `db`, read by SQL and woken by its NOTIFY.
   */
  ledger?: EventStore;
  /** Leaves per transaction at most (through the port: PORT_TREE_PAGE). */
  pageSize?: number;
  /** After a short page, wait at least this long before the next one, so one page takes many appends. */
  paceMs?: number;
  /** Look again this often even without a NOTIFY. */
  pollMs?: number;
  /**
   * The share of the time the follower may spend adding pages while it is behind: after a page that took t ms
   * it rests t * (1 / share - 1) ms. Hashing and storing a leaf costs about what appending its event did, so
   * an unbounded follower would halve a saturated append rate; at 0.2 appends keep >= 0.8 of it
   * (bench/ledger-append.ts) and the tree catches up when appends ease.
   */
  busyShare?: number;
  onError?: (error: unknown) => void;
  onAdvanced?: (head: TreeHead, added: number) => void;
}

export interface MerkleTree {
  /** Adds every readable event to the tree now and returns the head it reached. */
  catchUp(): Promise<TreeHead>;
  head(): Promise<TreeHead>;
  close(): Promise<void>;
}

export const MERKLE_TREE_DEFAULTS = { pageSize: 2_000, paceMs: 250, pollMs: 1_000, busyShare: 0.2 } as const;

export function startMerkleTree(db: Db, options: MerkleTreeOptions = {}): MerkleTree {
  const { ledger } = options;
  const pageSize = options.pageSize ?? (ledger ? PORT_TREE_PAGE : MERKLE_TREE_DEFAULTS.pageSize);
  const paceMs = options.paceMs ?? MERKLE_TREE_DEFAULTS.paceMs;
  const pollMs = options.pollMs ?? MERKLE_TREE_DEFAULTS.pollMs;
  const busyShare = options.busyShare ?? MERKLE_TREE_DEFAULTS.busyShare;
  if (!(busyShare > 0 && busyShare <= 1)) throw new RangeError(`busyShare is in (0, 1], got ${busyShare}`);
  const signal = ledger ? undefined : createAppendSignal(db);
  let closed = false;
  let wake: (() => void) | undefined;
  let woken = false;
  const onAppend = () => {
    woken = true;
    wake?.();
  };
  // The first wait ends early on an append (or close); the pace that follows only on close.
  const sleep = (ms: number, untilWoken: boolean) =>
    new Promise<void>((resolve) => {
      if (closed || (untilWoken && woken)) return resolve();
      const timer = setTimeout(finish, ms);
      function finish() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = untilWoken ? finish : () => closed && finish();
    });

  // One page at a time, whoever asks (the loop or catchUp).
  let turn: Promise<unknown> = Promise.resolve();
  const page = () => {
    const next = turn.then(() => (ledger ? appendPortTreePage(db, ledger, pageSize) : appendTreePage(db, pageSize)));
    turn = next.catch(() => undefined);
    return next;
  };

  const loop = (async () => {
    const unlisten = await signal?.listen(onAppend).catch(() => undefined);
    while (!closed) {
      woken = false;
      let added = 0;
      const started = performance.now();
      try {
        added = await page();
        if (added > 0) options.onAdvanced?.(await readTreeHead(db), added);
      } catch (error) {
        if (!closed) options.onError?.(error);
      }
      if (closed) break;
      const restMs = (performance.now() - started) * (1 / busyShare - 1);
      if (added > 0) {
        // More may wait (a page is cut by leaves and by bytes): rest, then look again without waiting for a
        // NOTIFY; a short page also waits the live pace, so the next one takes many appends.
        await sleep(added < pageSize ? Math.max(paceMs, restMs) : restMs, false);
        continue;
      }
      await sleep(pollMs, true);
    }
    unlisten?.();
    await signal?.close().catch(() => undefined);
  })();

  return {
    async catchUp() {
      while ((await page()) > 0) {
        // until a page adds nothing
      }
      return readTreeHead(db);
    },
    head: () => readTreeHead(db),
    async close() {
      closed = true;
      wake?.();
      await loop;
      await turn;
    },
  };
}
