/**
 * Collects work per key into batches: the first item of a key starts a batch at once; items that arrive
 * while that key's batch runs wait and form its next batch together. So an idle key adds no delay, and a
 * busy one pays one transaction per batch instead of one per item (the database path's group commit:
 * many concurrent enqueues of one tenant queue on one guard row anyway). Keys run side by side.
 */
export function createKeyedBatcher<Item, Result>(
  processBatch: (key: string, items: Item[]) => Promise<Result[]>,
  maxBatchSize: number,
): (key: string, item: Item) => Promise<Result> {
  interface Waiting {
    item: Item;
    resolve: (result: Result) => void;
    reject: (error: unknown) => void;
  }
  const waiting = new Map<string, Waiting[]>();
  const running = new Set<string>();

  const runNext = (key: string) => {
    const queue = waiting.get(key);
    if (running.has(key) || !queue || queue.length === 0) return;
    const batch = queue.splice(0, maxBatchSize);
    if (queue.length === 0) waiting.delete(key);
    running.add(key);
    processBatch(
      key,
      batch.map((each) => each.item),
    )
      .then(
        (results) => batch.forEach((each, i) => each.resolve(results[i]!)),
        (error: unknown) => batch.forEach((each) => each.reject(error)),
      )
      // The next batch starts on the next turn of the event loop, not at once: callers answered just now
      // usually enqueue again within the same turn, and should join it rather than leave it a batch of one.
      .finally(() =>
        setImmediate(() => {
          running.delete(key);
          runNext(key);
        }),
      );
  };

  return (key, item) =>
    new Promise<Result>((resolve, reject) => {
      const queue = waiting.get(key) ?? [];
      queue.push({ item, resolve, reject });
      waiting.set(key, queue);
      runNext(key);
    });
}
