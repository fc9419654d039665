/** One key's share of a group batch: its items, in arrival order. */
export interface KeyGroup<Item> {
  key: string;
  items: Item[];
}

export interface GroupBatcherLimits {
  /** Items of one key in one batch, at most. */
  maxItemsPerKey: number;
  /** Keys in one batch, at most. */
  maxKeys: number;
  /** Batches running at once, at most. */
  maxRunning: number;
}

/**
 * Collects work into batches (the database path's group commit): one batch gathers the waiting items of
 * several keys: whatever arrived for keys that are not running forms the next batch, up to `maxKeys` keys and
 * `maxItemsPerKey` items each, and up to `maxRunning` batches run at once. A key is in at most one running
 * batch, and its items are taken in arrival order, so within a key it is still first come first served. An
 * item that finds a batch slot free starts a batch at once (no added delay when idle). Keys are served
 * round-robin: a key with items left over goes back behind the keys that were already waiting.
 *
 * `processGroups` answers per group: a group's failure rejects only that group's items; if it throws,
 * every item of the batch is rejected.
 */
export function createGroupBatcher<Item, Result>(
  processGroups: (groups: Array<KeyGroup<Item>>) => Promise<Array<PromiseSettledResult<Result[]>>>,
  { maxItemsPerKey, maxKeys, maxRunning }: GroupBatcherLimits,
): (key: string, item: Item) => Promise<Result> {
  interface Waiting {
    item: Item;
    resolve: (result: Result) => void;
    reject: (error: unknown) => void;
  }
  // In the order keys started waiting: a Map iterates in insertion order.
  const waiting = new Map<string, Waiting[]>();
  const runningKeys = new Set<string>();
  let running = 0;

  const nextBatch = (): Array<{ key: string; batch: Waiting[] }> => {
    const groups: Array<{ key: string; batch: Waiting[] }> = [];
    // A snapshot: a key put back below must not be visited again in this pass.
    for (const [key, queue] of [...waiting]) {
      if (runningKeys.has(key)) continue;
      const batch = queue.splice(0, maxItemsPerKey);
      waiting.delete(key);
      // Left-overs wait behind the other keys.
      if (queue.length > 0) waiting.set(key, queue);
      groups.push({ key, batch });
      if (groups.length >= maxKeys) break;
    }
    return groups;
  };

  const start = (groups: Array<{ key: string; batch: Waiting[] }>) => {
    running++;
    for (const { key } of groups) runningKeys.add(key);
    const rejectAll = (error: unknown) => groups.forEach(({ batch }) => batch.forEach((each) => each.reject(error)));
    let answered: Promise<Array<PromiseSettledResult<Result[]>>>;
    try {
      answered = processGroups(groups.map(({ key, batch }) => ({ key, items: batch.map((each) => each.item) })));
    } catch (error) {
      answered = Promise.reject(error);
    }
    answered
      .then((settled) => {
        groups.forEach(({ batch }, g) => {
          const outcome = settled[g];
          if (!outcome) batch.forEach((each) => each.reject(new Error('the batch gave no answer for this key')));
          else if (outcome.status === 'rejected') batch.forEach((each) => each.reject(outcome.reason));
          else batch.forEach((each, i) => each.resolve(outcome.value[i]!));
        });
      }, rejectAll)
      // The keys are free again on the next turn of the event loop, not at once: callers answered just now
      // usually enqueue again within the same turn, and should join the next batch together rather than
      // leave it a batch of one.
      .finally(() =>
        setImmediate(() => {
          running--;
          for (const { key } of groups) runningKeys.delete(key);
          pump();
        }),
      );
  };

  const pump = () => {
    while (running < maxRunning) {
      const groups = nextBatch();
      if (groups.length === 0) return;
      start(groups);
    }
  };

  return (key, item) =>
    new Promise<Result>((resolve, reject) => {
      const queue = waiting.get(key);
      if (queue) queue.push({ item, resolve, reject });
      else waiting.set(key, [{ item, resolve, reject }]);
      pump();
    });
}
